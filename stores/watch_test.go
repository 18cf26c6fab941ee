package stores

import (
	"context"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
)

// A watch whose caller gives up while it is being set up (a run that ends
// within the round trip) must not leave its consumer on the server until
// the inactivity threshold: under load that was hundreds of consumers and
// most of a runner's memory.
func TestWatchCancelledDuringSetupLeavesNoConsumer(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	rs := q.Runs()
	for i := 0; i < 40; i++ {
		wctx, cancel := context.WithCancel(ctx)
		// cancel at various points of the setup, including before it starts
		time.AfterFunc(time.Duration(i%8)*250*time.Microsecond, cancel)
		ch, err := rs.Watch(wctx, queue.NewRunID())
		if err != nil {
			continue // cancelled before the watch existed: nothing to leave behind
		}
		for range ch { // drain until the watch closes
		}
		cancel()
	}
	st, err := q.Shared().JetStream.Stream(ctx, "KV_"+BucketRuns)
	if err != nil {
		t.Fatal(err)
	}
	// Deletion is a request per watch; the inactivity threshold is 5 s.
	deadline := time.Now().Add(2 * time.Second)
	for {
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watch consumers left on the server 2 s after their watches ended", info.State.Consumers)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
