package stores

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/workflows"
)

// testQueue is a queue with its stores, as the tests use them together.
type testQueue struct {
	*queue.Queue
	*Stores
}

// openTest opens a queue (queuetest.Open) and its stores, closed at the
// end of the test (the stores first).
func openTest(t testing.TB, cfg queue.Config) *testQueue {
	return openTestOpts(t, cfg, Options{})
}

// openTestOpts is openTest with options for the stores.
func openTestOpts(t testing.TB, cfg queue.Config, opts Options) *testQueue {
	t.Helper()
	q := queuetest.Open(t, cfg)
	return withStores(t, q, opts)
}

// withStores opens the stores of q for the test.
func withStores(t testing.TB, q *queue.Queue, opts Options) *testQueue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, q, opts)
	if err != nil {
		t.Fatalf("opening stores: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &testQueue{Queue: q, Stores: s}
}

// Close closes the stores, then the queue.
func (q *testQueue) Close() error {
	if err := q.Stores.Close(); err != nil {
		return err
	}
	return q.Queue.Close()
}

// AcceptDelivery is the stores' Publisher's.
func (q *testQueue) AcceptDelivery(ctx context.Context, d *Received, reqs []*queue.RunRequest) ([]queue.PublishResult, error) {
	return q.Publisher().AcceptDelivery(ctx, d, reqs)
}

// update rewrites the golden files (queuetest.Golden).
var _ = flag.Bool("update", false, "rewrite golden files")

var (
	testCtx      = queuetest.Ctx
	redeliver    = queuetest.Redeliver
	bigBody      = queuetest.BigBody
	startCluster = queuetest.StartCluster
)

// inlineMax is the largest body that travels inline: queue.Config's
// InlineBodyMax default (the embedded server's max_payload is larger).
const inlineMax = 256 << 10

// bodiesOf is the queue's hookrun_bodies object store.
func bodiesOf(t testing.TB, q *testQueue) jetstream.ObjectStore {
	t.Helper()
	st, err := q.Shared().JetStream.ObjectStore(testCtx(t, 10*time.Second), queue.BucketBodies)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// runsStream is the queue's HOOKRUN_RUNS.
func runsStream(t testing.TB, q *testQueue) jetstream.Stream {
	t.Helper()
	st, err := q.Shared().JetStream.Stream(testCtx(t, 10*time.Second), queue.StreamRuns)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// streamMsgs is the number of messages in HOOKRUN_RUNS.
func streamMsgs(t testing.TB, q *testQueue) uint64 {
	t.Helper()
	info, err := runsStream(t, q).Info(testCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	return info.State.Msgs
}

var deliverySeq atomic.Int64

// testRequest is a pull_request run request with a unique delivery id
// (as queue's own tests make them).
func testRequest(workflow string) *queue.RunRequest {
	n := deliverySeq.Add(1)
	return &queue.RunRequest{
		Workflow:       workflow,
		WorkflowDigest: "sha256:0123",
		Event: workflows.Event{
			Forge:      workflows.Forge("github"),
			Kind:       workflows.KindPullRequest,
			Action:     "opened",
			DeliveryID: fmt.Sprintf("d0e1f2a3-%04d-11ee-8c99-0242ac120002", n),
			Repo:       "octo/hello",
			CloneURL:   "https://github.com/octo/hello.git",
			Sender:     "octocat",
			PullRequest: &workflows.PullRequest{
				Number: int(n), Title: "Add feature", HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
				HeadRef: "feature", BaseRef: "main",
			},
			Raw: []byte(`{"action":"opened"}`),
		},
	}
}

// deliveryRequests is one delivery that matched n workflows.
func deliveryRequests(n int) []*queue.RunRequest {
	return queuetest.DeliveryRequests(testRequest("multi"), n)
}

// goldenEvent is the event of the golden files (as queue's own tests
// have it).
func goldenEvent() workflows.Event {
	return workflows.Event{
		Forge: workflows.Forge("github"), Kind: workflows.KindPullRequest, Action: "opened",
		DeliveryID: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
		Repo:       "Codertocat/Hello-World", CloneURL: "https://github.com/Codertocat/Hello-World.git",
		Sender: "Codertocat", AuthorAssociation: "OWNER",
		PullRequest: &workflows.PullRequest{Number: 2, Title: "Update the README with new information.",
			HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", HeadRef: "changes", BaseRef: "master"},
		Raw: json.RawMessage(`{"action":"opened","number":2}`),
	}
}
