package contract

import (
	"errors"
	"time"
)

// Causes the engine's run context is cancelled with
// (context.WithCancelCause); the runner's claim loop chooses them.
var (
	// ErrCancelled is the cause when a user (the API) or a newer run of the
	// same concurrency group cancels a run: the run ends cancelled and its
	// cancel and exit handlers run.
	ErrCancelled = errors.New("run cancelled")
	// ErrAbandoned is the cause when the runner stops working on a run it
	// will not finish (shutdown, claim lost): no handler runs and no final
	// report is sent; another runner executes the run again.
	ErrAbandoned = errors.New("run abandoned by this runner")
)

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

// RetryAfterError is returned by a Reporter when the forge asked it to wait
// (Retry-After, a rate limit's reset) longer than the report's context
// allowed: whoever retries the report (the runner's outbox) waits After.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter is how long err (a RetryAfterError in its chain) asks to wait
// before the report is tried again; false when it says nothing.
func RetryAfter(err error) (time.Duration, bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return ra.After, true
	}
	return 0, false
}
