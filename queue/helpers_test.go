package queue

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// testLogger keeps test output quiet unless -v.
func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		w := &tWriter{t: t}
		t.Cleanup(func() { w.done.Store(true) }) // runs after the queues' cleanups
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// tWriter logs through t until the test is over (t.Log then panics).
type tWriter struct {
	t    testing.TB
	done atomic.Bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(string(p))
	}
	return len(p), nil
}

// testRequestKey authenticates the run requests of every queue a test opens.
var testRequestKey = []byte("queue-test-request-key-0123456789abcdef")

// openTest opens an embedded queue in a fresh data dir (unless cfg has one)
// and closes it at the end of the test.
func openTest(t testing.TB, cfg Config) *Queue {
	t.Helper()
	if cfg.DataDir == "" && cfg.URL == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	if cfg.RequestKey == nil {
		cfg.RequestKey = testRequestKey
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var deliverySeq atomic.Int64

// testRequest is a pull_request run request with a unique delivery id.
func testRequest(workflow string) *RunRequest {
	n := deliverySeq.Add(1)
	return &RunRequest{
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
