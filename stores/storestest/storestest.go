// Package storestest opens a queue with its stores for tests outside
// package stores: the queue publishes and consumes only with its run
// records attached, and ingress publishes through the stores. Test code
// only; it imports queue, queuetest and stores.
package storestest

import (
	"context"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/stores"
)

// Queue is a queue with its stores. It satisfies what ingress publishes
// through (stores.Publisher's methods: Publish, PublishDelivery, Ready,
// AcceptDelivery, Runs, Received, Heads).
type Queue struct {
	*queue.Queue
	*stores.Stores
}

// Open opens a queue (queuetest.Open) and its stores, closed at the end of
// the test (the stores first).
func Open(t testing.TB, cfg queue.Config) *Queue {
	t.Helper()
	return With(t, queuetest.Open(t, cfg))
}

// With opens the stores of q for the test.
func With(t testing.TB, q *queue.Queue) *Queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := stores.Open(ctx, q, stores.Options{})
	if err != nil {
		t.Fatalf("opening stores: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &Queue{Queue: q, Stores: s}
}

// Close closes the stores, then the queue.
func (q *Queue) Close() error {
	if err := q.Stores.Close(); err != nil {
		return err
	}
	return q.Queue.Close()
}

// AcceptDelivery is the stores' Publisher's.
func (q *Queue) AcceptDelivery(ctx context.Context, d *stores.Received, reqs []*queue.RunRequest) ([]queue.PublishResult, error) {
	return q.Publisher().AcceptDelivery(ctx, d, reqs)
}
