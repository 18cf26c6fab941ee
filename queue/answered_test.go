package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// A read of hookrun_bodies that nobody answered (a replicated store's
// direct-get responders not up yet) is tried again; any other answer,
// found or not, is returned as it is; and the tries are bounded.
func TestBodyReadsWaitForAnAnswer(t *testing.T) {
	saved := noResponderWaits
	noResponderWaits = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	t.Cleanup(func() { noResponderWaits = saved })
	ctx := context.Background()
	notFound := errors.New("object not found")
	for _, c := range []struct {
		name    string
		answers []error // one per try; the last repeats
		tries   int
		want    error
	}{
		{"answered at the third try", []error{nats.ErrNoResponders, nats.ErrNoResponders, nil}, 3, nil},
		{"another error at once", []error{notFound}, 1, notFound},
		{"never answered", []error{nats.ErrNoResponders}, 4, nats.ErrNoResponders},
	} {
		t.Run(c.name, func(t *testing.T) {
			tries := 0
			v, err := untilAnswered(ctx, func() (int, error) {
				err := c.answers[min(tries, len(c.answers)-1)]
				tries++
				if err != nil {
					return 0, err
				}
				return 42, nil
			})
			if tries != c.tries || !errors.Is(err, c.want) || (err == nil && v != 42) {
				t.Fatalf("%d tries, %v, %v; want %d tries, %v", tries, v, err, c.tries, c.want)
			}
		})
	}
	// A context that ends stops the waiting.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	tries := 0
	if _, err := untilAnswered(cctx, func() (int, error) { tries++; return 0, nats.ErrNoResponders }); tries != 1 || !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("cancelled: %d tries, %v", tries, err)
	}
}
