package queue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// A webhook body larger than Queue.inlineMax (up to ingress's 25 MiB cap)
// does not travel inside its run requests: a plain nats-server refuses
// messages above its max_payload (1 MiB by default). It is stored once in
// the hookrun_bodies object store (chunked below max_payload), shared by
// the runs of its delivery, named in RunRequest.Body, and read back by the
// consumer before the handler sees the request (Event.Raw as if it had
// travelled inline). It expires after Config.BodyTTL.

// openBodies creates or updates the hookrun_bodies object store, whose
// objects expire after ttl.
func openBodies(ctx context.Context, sh Shared, ttl time.Duration) (jetstream.ObjectStore, error) {
	var st jetstream.ObjectStore
	err := UntilReady(ctx, sh.Logger, "creating object store "+BucketBodies, func(ctx context.Context) (err error) {
		st, err = sh.JetStream.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      BucketBodies,
			Description: "hookrun webhook bodies too large for a run request",
			TTL:         ttl,
			Storage:     jetstream.FileStorage,
			Replicas:    sh.Replicas,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return answeredBodies{st}, nil
}

// answeredBodies reads hookrun_bodies again when nobody answered a read
// (nats.ErrNoResponders, within noResponderWaits). A replicated object
// store is read with direct gets, which its replicas answer once they
// serve the stream: right after the stream was created (a cluster's first
// delivery, as TestLargeBodiesCluster's was) or while a replica rejoins,
// there may be none for a moment, and a delivery would be refused for it.
type answeredBodies struct{ jetstream.ObjectStore }

func (b answeredBodies) GetInfo(ctx context.Context, name string, opts ...jetstream.GetObjectInfoOpt) (*jetstream.ObjectInfo, error) {
	return untilAnswered(ctx, func() (*jetstream.ObjectInfo, error) { return b.ObjectStore.GetInfo(ctx, name, opts...) })
}

func (b answeredBodies) GetBytes(ctx context.Context, name string, opts ...jetstream.GetObjectOpt) ([]byte, error) {
	return untilAnswered(ctx, func() ([]byte, error) { return b.ObjectStore.GetBytes(ctx, name, opts...) })
}

// noResponderWaits are the waits before each new try of a read nobody
// answered: 1.55 s in all, well within a publish's bound.
var noResponderWaits = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

// untilAnswered calls read, and again after each of noResponderWaits
// while it fails with nats.ErrNoResponders (and ctx lasts).
func untilAnswered[T any](ctx context.Context, read func() (T, error)) (T, error) {
	return readWhile(ctx, noResponderWaits, func(err error) bool { return errors.Is(err, nats.ErrNoResponders) }, read)
}

// readWhile calls read, and again after each of waits while its error is
// one again says to retry (and ctx lasts); it returns the last answer.
func readWhile[T any](ctx context.Context, waits []time.Duration, again func(error) bool, read func() (T, error)) (T, error) {
	v, err := read()
	for _, wait := range waits {
		if err == nil || !again(err) {
			break
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		v, err = read()
	}
	return v, err
}

// BodyName is the hookrun_bodies object of the body of a delivery (the
// run id for a run without a delivery id), shared by its runs and its
// stored copy.
func BodyName(forge workflows.Forge, delivery string) string {
	sum := sha256.Sum256([]byte(string(forge) + ":" + delivery))
	return string(forge) + "." + hex.EncodeToString(sum[:])
}

// Body reads a stored body; errors.Is(err, jetstream.ErrObjectNotFound)
// when there is none (expired, or never stored).
func (q *Queue) Body(ctx context.Context, name string) ([]byte, error) {
	return q.bodies.GetBytes(ctx, name)
}

// RemoveBody removes the body of a delivery, if it is stored.
func (q *Queue) RemoveBody(ctx context.Context, forge workflows.Forge, delivery string) error {
	name := BodyName(forge, delivery)
	if err := q.bodies.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("removing body %s: %w", name, err)
	}
	return nil
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
		w.body = BodyName(w.req.Event.Forge, w.delivery)
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

// notFoundWaits are loadBody's waits before each new read of a body not
// found.
var notFoundWaits = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}

// loadBody reads the body a run request references into its Event.Raw.
// A body not found is looked for again a few times: in a cluster the
// replica that answers may lag the quorum that acknowledged it.
func (q *Queue) loadBody(ctx context.Context, req *RunRequest) error {
	// Twice a publish's bound: up to 25 MiB, chunk by chunk.
	ctx, cancel := context.WithTimeout(ctx, 2*q.cfg.PublishTimeout)
	defer cancel()
	raw, err := readWhile(ctx, notFoundWaits, func(err error) bool { return errors.Is(err, jetstream.ErrObjectNotFound) },
		func() ([]byte, error) { return q.bodies.GetBytes(ctx, req.Body) })
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
