package ingress

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// 500 concurrent signed deliveries, 20% of them duplicates of others, against
// a real embedded JetStream: the stream ends up with exactly one message per
// unique (delivery, workflow), and every copy of a delivery gets the same
// runs answer.
func TestConcurrentDeliveriesDedupe(t *testing.T) {
	const (
		total  = 500
		unique = 400 // the other 100 repeat one of these
	)
	env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow, "review.yaml": reviewWorkflow})
	body := readFile(t, githubFixtures+"pull_request/opened.payload.json")

	deliveries := make([]string, 0, total)
	for i := range unique {
		deliveries = append(deliveries, fmt.Sprintf("load-%04d", i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range total - unique {
		deliveries = append(deliveries, deliveries[rng.IntN(unique)])
	}
	rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	bodies := map[string][]byte{} // one event each: the same body is the same event under any delivery id
	for i := range unique {
		d := fmt.Sprintf("load-%04d", i)
		bodies[d] = touched(t, body, i)
	}

	answers := make([]answer, total)
	latencies := make([]time.Duration, total)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, d := range deliveries {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			answers[i] = env.github(t, "pull_request", d, bodies[d])
			latencies[i] = time.Since(t0)
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)

	byDelivery := map[string]string{}
	runIDs := map[string]bool{}
	dups := 0
	for i, a := range answers {
		if a.Code != http.StatusAccepted || len(a.Runs) != 1 || a.Runs[0].Workflow != "pr-check" || a.Delivery != deliveries[i] {
			t.Fatalf("delivery %s: %d %s\n%s", deliveries[i], a.Code, a.Raw, env.logs)
		}
		runs, _ := json.Marshal(a.Runs)
		if prev, seen := byDelivery[deliveries[i]]; seen && prev != string(runs) {
			t.Errorf("delivery %s answered %s and %s", deliveries[i], prev, runs)
		}
		byDelivery[deliveries[i]] = string(runs)
		runIDs[a.Runs[0].ID] = true
		if a.Duplicate {
			dups++
		}
	}
	if len(runIDs) != unique || dups != total-unique {
		t.Fatalf("%d distinct run ids and %d duplicate answers, want %d and %d", len(runIDs), dups, unique, total-unique)
	}
	inStream := streamRunIDs(t, env.q)
	if len(inStream) != unique {
		t.Fatalf("stream holds %d messages, want %d", len(inStream), unique)
	}
	for _, id := range inStream {
		if !runIDs[id] {
			t.Errorf("stream holds run %s that no answer named", id)
		}
	}
	slices.Sort(latencies)
	t.Logf("%d deliveries (%d unique) in %v: %.0f deliveries/s; answer latency p50 %v p99 %v max %v",
		total, unique, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		latencies[total/2].Round(time.Millisecond), latencies[total*99/100].Round(time.Millisecond), latencies[total-1].Round(time.Millisecond))
}

// When JetStream goes away mid-load, answers turn into 503, and every 202
// given before has its message in the stream (checked after a restart on the
// same data directory).
func TestQueueStoppedMidLoad(t *testing.T) {
	const (
		total      = 300
		workers    = 16
		closeAfter = 100
	)
	dir := t.TempDir()
	q1 := openQueue(t, dir)
	env := newEnvWith(t, Config{PublishTimeout: 2 * time.Second}, q1, map[string]string{"pr.yaml": prWorkflow})
	body := readFile(t, githubFixtures+"pull_request/opened.payload.json")

	type outcome struct {
		code        int
		runID       string
		afterClosed bool // sent after Close had returned
	}
	results := make([]outcome, total)
	var (
		next     atomic.Int64
		answered atomic.Int64
		closed   atomic.Bool
		closeErr = make(chan error, 1)
		once     sync.Once
	)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				after := closed.Load()
				a := env.github(t, "pull_request", fmt.Sprintf("stop-%04d", i), touched(t, body, i))
				o := outcome{code: a.Code, afterClosed: after}
				if a.Code == http.StatusAccepted {
					if len(a.Runs) != 1 {
						t.Errorf("202 without a run: %s", a.Raw)
					} else {
						o.runID = a.Runs[0].ID
					}
				}
				results[i] = o
				if answered.Add(1) == closeAfter {
					once.Do(func() {
						go func() {
							err := q1.Close()
							closed.Store(true)
							closeErr <- err
						}()
					})
				}
			}
		})
	}
	wg.Wait()
	if err := <-closeErr; err != nil {
		t.Logf("closing the queue mid-load: %v", err)
	}

	accepted := map[string]bool{}
	var n503, afterClose int
	for i, o := range results {
		switch o.code {
		case http.StatusAccepted:
			accepted[o.runID] = true
			if o.afterClosed {
				t.Errorf("delivery %d sent after the queue closed got 202", i)
			}
		case http.StatusServiceUnavailable:
			n503++
		default:
			t.Errorf("delivery %d: code %d, want 202 or 503", i, o.code)
		}
		if o.afterClosed {
			afterClose++
		}
	}
	if len(accepted) < closeAfter-workers || n503 == 0 || afterClose == 0 {
		t.Fatalf("%d accepted, %d unavailable, %d sent after close: the queue did not stop mid-load", len(accepted), n503, afterClose)
	}
	if code, _ := env.get(t, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("readyz with the queue stopped: %d", code)
	}

	q2 := openQueue(t, dir)
	inStream := map[string]bool{}
	for _, id := range streamRunIDs(t, q2) {
		inStream[id] = true
	}
	for id := range accepted {
		if !inStream[id] {
			t.Errorf("run %s was answered 202 but is not in the stream", id)
		}
	}
	t.Logf("%d accepted (all in the stream), %d answered 503, stream holds %d", len(accepted), n503, len(inStream))
}
