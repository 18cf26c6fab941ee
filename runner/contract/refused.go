package contract

import "errors"

// ErrRefused is matched (errors.Is) by an error a provider returns when the
// server's policy forbids what a run asks for: a clone URL outside its
// forge's host, a repository the server does not act for. Retrying cannot
// change the answer, so the runner fails such a run at once instead of
// handing it back to the queue.
var ErrRefused = errors.New("refused by policy")

// Refuse marks err as a refusal: errors.Is(Refuse(err), ErrRefused) holds
// and the message stays err's. Refuse(nil) is nil.
func Refuse(err error) error {
	if err == nil {
		return nil
	}
	return refusal{err}
}

type refusal struct{ err error }

func (r refusal) Error() string   { return r.err.Error() }
func (r refusal) Unwrap() []error { return []error{r.err, ErrRefused} }
