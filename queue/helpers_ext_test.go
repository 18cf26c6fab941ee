package queue_test

import (
	"flag"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/stores/storestest"
)

// testQueue is a queue with the stores that keep its run records: the
// queue publishes and consumes only with them attached.
type testQueue = storestest.Queue

// update rewrites the golden files (queuetest.Golden).
var _ = flag.Bool("update", false, "rewrite golden files")

var (
	openTest   = storestest.Open
	withStores = storestest.With
)

var (
	testCtx        = queuetest.Ctx
	testRequest    = queue.TestRequest
	testLogger     = queuetest.Logger
	testRequestKey = queuetest.RequestKey
	redeliver      = queuetest.Redeliver
	bigBody        = queuetest.BigBody
	freeAddrs      = queuetest.FreeAddrs
	golden         = queuetest.Golden
	goldenEvent    = queue.GoldenEvent
	fixedTime      = queuetest.FixedTime
)

// streamMsgs is the number of messages in HOOKRUN_RUNS.
func streamMsgs(t testing.TB, q *testQueue) uint64 {
	t.Helper()
	info, err := q.RunsStream().Info(testCtx(t, 5*time.Second))
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	return info.State.Msgs
}

// signedMsg is a message of data on subject with the authenticator q's
// Publish would give it.
func signedMsg(q *testQueue, subject string, data []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	m.Header.Set(queue.HeaderMAC, q.SignHeader(subject, data))
	return m
}

// startCluster starts three embedded nodes (queuetest.StartCluster) with
// their stores.
func startCluster(t *testing.T) ([]*testQueue, string) {
	nodes, urls := queuetest.StartCluster(t)
	out := make([]*testQueue, len(nodes))
	for i, n := range nodes {
		out[i] = withStores(t, n)
	}
	return out, urls
}

// deliveryRequests is one delivery that matched n workflows.
func deliveryRequests(n int) []*queue.RunRequest {
	return queuetest.DeliveryRequests(testRequest("multi"), n)
}
