package stores

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// Three nodes at R3; the node leading HOOKRUN_RUNS is shut down while
// 2,000 runs are published and consumed by two runners.
func TestClusterNodeLoss(t *testing.T) {
	const total = 2000
	began := time.Now()
	nodes, urls := startCluster(t)
	t.Logf("cluster up in %s", time.Since(began))
	ctx := testCtx(t, 60*time.Second)

	client := func() *testQueue {
		return openTest(t, queue.Config{URL: urls, PasswordFile: nodes[0].PasswordFile(), Replicas: 3, PublishTimeout: 2 * time.Second})
	}
	pub := client()

	var (
		mu           sync.Mutex
		completions  = map[string]int{} // CAS to succeeded reported success
		ambiguous    = map[string]int{} // CAS failed without a conflict: it may have landed
		alreadyDone  atomic.Int32
		handlerCalls atomic.Int32
	)
	handler := func(q *testQueue) queue.Handler {
		return func(ctx context.Context, d *queue.Delivery) error {
			handlerCalls.Add(1)
			for {
				rec, rev, err := q.Runs().Get(ctx, d.Request.ID)
				if errors.Is(err, ErrNotFound) {
					return queue.Retry(err, 100*time.Millisecond) // the record write is still on its way
				}
				if err != nil {
					return err
				}
				if rec.Status.Terminal() {
					alreadyDone.Add(1) // a redelivery of a finished run: skip it
					return nil
				}
				now := time.Now().UTC()
				rec.Status, rec.FinishedAt = workflows.StatusSucceeded, &now
				_, err = q.Runs().Update(ctx, rec, rev)
				if errors.Is(err, ErrConflict) {
					continue
				}
				mu.Lock()
				if err != nil {
					ambiguous[d.Request.ID]++ // the redelivery finds out
				} else {
					completions[d.Request.ID]++
				}
				mu.Unlock()
				return err
			}
		}
	}
	ccfg := queue.ConsumerConfig{AckWait: 2 * time.Second, Concurrency: 16, MaxAckPending: 64, MaxDeliver: 50,
		Backoff: []time.Duration{100 * time.Millisecond}, FetchWait: 500 * time.Millisecond}
	for range 2 {
		r := client()
		c, err := r.Consume(ctx, ccfg, handler(r))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
	}

	// Find and kill the stream leader once a quarter is published.
	info, err := runsStream(t, pub).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := info.Cluster.Leader
	var victim *queue.Queue
	for i, n := range nodes {
		if fmt.Sprintf("n%d", i+1) == leader { // queuetest.StartCluster's server names
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("no node named %q leads %s", leader, queue.StreamRuns)
	}

	var (
		published = make(map[string]bool, total)
		pubMu     sync.Mutex
		count     atomic.Int32
		retries   atomic.Int32
		killed    = make(chan time.Time, 1)
		pwg       sync.WaitGroup
	)
	work := make(chan *queue.RunRequest)
	for range 48 {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for req := range work {
				for {
					r := *req
					res, err := pub.Publish(ctx, &r)
					if err == nil {
						pubMu.Lock()
						published[res.RunID] = true
						pubMu.Unlock()
						break
					}
					if ctx.Err() != nil {
						t.Errorf("publishing: %v", err)
						return
					}
					retries.Add(1) // ingress would answer 503; the forge retries
					time.Sleep(50 * time.Millisecond)
				}
				if count.Add(1) == total/4 {
					go func() {
						_ = victim.Close()
						killed <- time.Now()
					}()
				}
			}
		}()
	}
	for range total {
		work <- testRequest("cluster")
	}
	close(work)
	pwg.Wait()
	t.Logf("published %d in %s (%d retried publishes); node %s killed", total, time.Since(began), retries.Load(), leader)
	<-killed
	if len(published) != total {
		t.Fatalf("%d distinct run ids for %d deliveries", len(published), total)
	}

	// Done when every run's record is succeeded and the work queue is
	// empty: polled on the run index (memory), then confirmed by a List
	// (which reads every record).
	var succeeded map[string]bool
	done := ListFilter{Workflow: "cluster", Status: workflows.StatusSucceeded}
	x := pub.Runs().StartIndex()
	for {
		var err error
		if ids, _, _ := x.page(done, "", 0); len(ids) >= total && streamMsgs(t, pub) == 0 {
			var recs []*RunRecord
			if recs, _, err = pub.Runs().List(ctx, done); err == nil {
				succeeded = map[string]bool{}
				for _, r := range recs {
					succeeded[r.ID] = true
				}
				if len(succeeded) >= total {
					break
				}
			}
		}
		if ctx.Err() != nil {
			dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			shown := 0
			for id := range published {
				if !succeeded[id] && shown < 5 {
					shown++
					rec, rev, err := pub.Runs().Get(dctx, id)
					t.Logf("unfinished run %s: record %+v rev %d err %v", id, rec, rev, err)
				}
			}
			if info, err := runsStream(t, pub).Info(dctx); err == nil {
				t.Logf("stream state %+v", info.State)
			}
			if ci, err := pub.Shared().JetStream.Consumer(dctx, queue.StreamRuns, "hookrun-runner"); err == nil {
				if info, err := ci.Info(dctx); err == nil {
					t.Logf("consumer: pending %d, ack pending %d, redelivered %d, waiting %d", info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting)
				}
			}
			t.Fatalf("%d of %d runs succeeded (%v)", len(succeeded), total, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	mu.Lock()
	for id := range published {
		switch {
		case !succeeded[id]:
			t.Errorf("run %s not succeeded", id)
		case completions[id] > 1:
			t.Errorf("run %s completed %d times", id, completions[id])
		case completions[id] == 0 && ambiguous[id] == 0:
			t.Errorf("run %s succeeded without a handler completing it", id)
		}
	}
	for id := range completions {
		if !published[id] {
			t.Errorf("run %s ran but no publish returned it", id)
		}
	}
	if len(succeeded) != total {
		t.Errorf("%d succeeded records, want %d", len(succeeded), total)
	}
	nAmbiguous := len(ambiguous)
	mu.Unlock()
	// Every message acked: the work queue drains.
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := runsStream(t, pub).Info(ctx)
		if err == nil && info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not drained: %+v %v", info.State, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("all %d consumed and acked in %s; %d handler calls, %d redeliveries of finished runs, %d completions with an unconfirmed write",
		total, time.Since(began), handlerCalls.Load(), alreadyDone.Load(), nAmbiguous)
}
