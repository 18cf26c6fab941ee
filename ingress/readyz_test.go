package ingress

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// pollReadyz asks /readyz until it answers code, failing after a few
// seconds; it returns the body.
func pollReadyz(t *testing.T, env *testEnv, code int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, body := env.get(t, "/readyz")
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz %d %s, want %d", got, body, code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// /readyz is unready, with the reason, while the run index's watch is
// down, and ready again once the restarted watch caught up (with a run
// written meanwhile).
func TestReadyzFollowsTheRunIndex(t *testing.T) {
	t.Parallel()
	env := newEnv(t, Config{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	x := env.q.Runs().StartIndex()
	if err := x.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	pollReadyz(t, env, http.StatusOK)
	if err := x.StopWatch(time.Second); err != nil {
		t.Fatal(err)
	}
	body := pollReadyz(t, env, http.StatusServiceUnavailable)
	if !strings.Contains(body, `"status":"run index unavailable"`) || !strings.Contains(body, "watch down since") {
		t.Fatalf("readyz while the watch is down: %s", body)
	}
	id := queue.NewRunID()
	if _, err := env.q.Runs().Create(ctx, &stores.RunRecord{ID: id, Workflow: "meanwhile", Status: workflows.StatusQueued}); err != nil {
		t.Fatal(err)
	}
	pollReadyz(t, env, http.StatusOK)
	if n := x.Len(); n != 1 {
		t.Fatalf("index holds %d records once ready again, want the one written meanwhile", n)
	}
}
