package queue

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// Run-request authentication (issue #24, 2b). Whoever reaches NATS can put
// a message on hookrun.runs.*; a runner must not take that for a decision
// of ingress. Every run request therefore carries, in the NATS header
// HeaderMAC, an HMAC-SHA256 that the publisher (ingress: webhook
// deliveries, API starts, re-runs, replays, /retry, Slack; all of them go
// through PublishDelivery) computes with Config.RequestKey over
//
//	"hookrun-run-request-v1" 0x00 subject 0x00 body
//
// where body is the exact message data (the JSON RunRequest; it names the
// workflow, the run id, the event, and for a large webhook body the
// hookrun_bodies object and its SHA-256, RunRequest.BodyDigest). The
// consumer checks it, in constant time, on the bytes it received before it
// decodes, reconciles, reads a stored body or calls the handler. A request
// whose authenticator is missing or wrong is terminated (JetStream's
// term-with-reason, which also removes it from the work queue), logged
// and counted (ConsumerObserver.Unauthenticated): nothing in it is
// trusted, its run id included, so no run record is written or changed
// (a forged request naming a real run's id leaves that run alone). The key
// never travels, never appears in a log, and only ingress and runners
// hold it.

// HeaderMAC is the NATS header of a run request's authenticator: the
// lower-case hex HMAC-SHA256 described above.
const HeaderMAC = "Hookrun-Mac"

// MinRequestKey is the shortest Config.RequestKey accepted, in bytes.
const MinRequestKey = 32

// macDomain separates run-request MACs from any other use of the key.
const macDomain = "hookrun-run-request-v1"

// ErrUnauthenticated: a run request without a valid authenticator.
var ErrUnauthenticated = errors.New("run request not authenticated")

// macer computes and checks run-request authenticators with one key,
// recycling the HMAC states and their scratch space.
type macer struct {
	pool sync.Pool // of *macState
}

// macState is one HMAC state and the buffer its input prefix and sum are
// written into.
type macState struct {
	h   hash.Hash
	buf []byte
}

func newMacer(key []byte) *macer {
	if len(key) == 0 {
		return nil
	}
	k := append([]byte(nil), key...)
	m := &macer{}
	m.pool.New = func() any { return &macState{h: hmac.New(sha256.New, k), buf: make([]byte, 0, 128)} }
	return m
}

// sum writes the raw MAC of (subject, body) into out.
func (m *macer) sum(out *[sha256.Size]byte, subject string, body []byte) {
	s := m.pool.Get().(*macState)
	s.h.Reset()
	s.buf = append(append(append(append(s.buf[:0], macDomain...), 0), subject...), 0)
	s.h.Write(s.buf)
	s.h.Write(body)
	s.buf = s.h.Sum(s.buf[:0])
	copy(out[:], s.buf)
	m.pool.Put(s)
}

// header is the HeaderMAC value of (subject, body).
func (m *macer) header(subject string, body []byte) string {
	var raw [sha256.Size]byte
	var out [2 * sha256.Size]byte
	m.sum(&raw, subject, body)
	hex.Encode(out[:], raw[:])
	return string(out[:])
}

// verify checks the HeaderMAC value got against (subject, body).
func (m *macer) verify(subject string, body []byte, got string) error {
	if m == nil {
		return fmt.Errorf("%w: this process has no request key", ErrUnauthenticated)
	}
	if got == "" {
		return fmt.Errorf("%w: no %s header", ErrUnauthenticated, HeaderMAC)
	}
	var want [sha256.Size]byte
	var mac [sha256.Size]byte
	if len(got) != 2*sha256.Size {
		return fmt.Errorf("%w: malformed %s header", ErrUnauthenticated, HeaderMAC)
	}
	if _, err := hex.Decode(mac[:], []byte(got)); err != nil {
		return fmt.Errorf("%w: malformed %s header", ErrUnauthenticated, HeaderMAC)
	}
	m.sum(&want, subject, body)
	if !hmac.Equal(want[:], mac[:]) {
		return fmt.Errorf("%w: wrong %s (another key, or the request was changed)", ErrUnauthenticated, HeaderMAC)
	}
	return nil
}

// bodyDigest is RunRequest.BodyDigest of a webhook body.
func bodyDigest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}
