package queue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A webhook body larger than Queue.inlineMax (up to ingress's 25 MiB cap)
// does not travel inside its run requests: a plain nats-server refuses
// messages above its max_payload (1 MiB by default). It is stored once in
// the hookrun_bodies object store (chunked below max_payload), shared by
// the runs of its delivery, named in RunRequest.Body, and read back by the
// consumer before the handler sees the request (Event.Raw as if it had
// travelled inline). It expires after Config.BodyTTL.

// bodyName is the hookrun_bodies object of a delivery's body.
func bodyName(w *runWrite) string {
	sum := sha256.Sum256([]byte(string(w.req.Event.Forge) + ":" + w.delivery))
	return string(w.req.Event.Forge) + "." + hex.EncodeToString(sum[:])
}

// storeBodies stores the body of every run whose body is too large to
// travel inline (once per delivery) and notes its name in the run's write.
// A body an earlier attempt of the delivery stored is reused, never
// rewritten under a runner that may be reading it. It returns the objects
// this call created, for the rollback.
func (q *Queue) storeBodies(ctx context.Context, ws []*runWrite) (created []string, _ error) {
	done := map[string]string{} // body name: its digest
	for _, w := range ws {
		raw := w.req.Event.Raw
		if len(raw) <= q.inlineMax {
			continue
		}
		w.body = bodyName(w)
		if d, ok := done[w.body]; ok {
			w.bodyDigest = d
			continue
		}
		sum := sha256.Sum256(raw)
		w.bodyDigest = "sha256:" + hex.EncodeToString(sum[:])
		done[w.body] = w.bodyDigest
		info, err := q.bodies.GetInfo(ctx, w.body)
		if err == nil && info.Size == uint64(len(raw)) && info.Digest == objectDigest(sum) {
			continue
		}
		if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return created, fmt.Errorf("publishing run %s: reading body %s: %w", w.req.ID, w.body, err)
		}
		if _, err := q.bodies.PutBytes(ctx, w.body, raw); err != nil {
			// A failed put removes its chunks itself; a lost answer
			// may leave the object, which is removed like a created one.
			return append(created, w.body), fmt.Errorf("publishing run %s: storing body of %d bytes: %w", w.req.ID, len(raw), err)
		}
		created = append(created, w.body)
	}
	return created, nil
}

// deleteBodies removes, best effort, the bodies a failed publish stored.
func (q *Queue) deleteBodies(ctx context.Context, names []string) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.cfg.PublishTimeout)
	defer cancel()
	for _, n := range names {
		if err := q.bodies.Delete(ctx, n); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			q.log.Warn("removing the body of a failed publish", "body", n, "err", err)
		}
	}
}

// loadBody reads the body a run request references into its Event.Raw.
// A body not found is looked for again a few times: in a cluster the
// replica that answers may lag the quorum that acknowledged it.
func (q *Queue) loadBody(ctx context.Context, req *RunRequest) error {
	// Twice a publish's bound: up to 25 MiB, chunk by chunk.
	ctx, cancel := context.WithTimeout(ctx, 2*q.cfg.PublishTimeout)
	defer cancel()
	raw, err := q.bodies.GetBytes(ctx, req.Body)
	for wait := 50 * time.Millisecond; errors.Is(err, jetstream.ErrObjectNotFound) && wait <= 400*time.Millisecond; wait *= 2 {
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		raw, err = q.bodies.GetBytes(ctx, req.Body)
	}
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("reading the webhook body %s of run %s: it is gone (bodies are kept for %s): %w", req.Body, req.ID, q.cfg.BodyTTL, err)
	}
	if err != nil {
		return fmt.Errorf("reading the webhook body %s of run %s: %w", req.Body, req.ID, err)
	}
	if req.BodyDigest == "" || bodyDigest(raw) != req.BodyDigest {
		// Not what ingress stored (the request's authenticator covers
		// the digest): the run must not see it. Not retried.
		return fmt.Errorf("reading the webhook body %s of run %s: %w", req.Body, req.ID, ErrBodyMismatch)
	}
	req.Event.Raw = raw
	return nil
}

// ErrBodyMismatch: a stored webhook body is not the one its run request's
// BodyDigest names (changed in the store, or the request has no digest).
var ErrBodyMismatch = errors.New("the stored body does not match the digest in the run request")

// objectDigest is the object store's ObjectInfo.Digest of a SHA-256 sum.
func objectDigest(sum [sha256.Size]byte) string {
	return "SHA-256=" + base64.URLEncoding.EncodeToString(sum[:])
}
