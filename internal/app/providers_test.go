package app

import (
	"errors"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

func TestKeepContainer(t *testing.T) {
	now := time.Now()
	rec := func(s workflows.Status, beat time.Duration) *queue.RunRecord {
		return &queue.RunRecord{Status: s, HeartbeatAt: now.Add(-beat)}
	}
	for _, tc := range []struct {
		name string
		rec  *queue.RunRecord
		err  error
		keep bool
	}{
		{"run unknown here: another installation's", nil, queue.ErrNotFound, true},
		{"store unreadable", nil, errors.New("timeout"), true},
		{"running, fresh heartbeat", rec(workflows.StatusRunning, time.Second), nil, true},
		{"running, stale heartbeat", rec(workflows.StatusRunning, time.Minute), nil, false},
		{"queued (handed back, not started again)", rec(workflows.StatusQueued, time.Hour), nil, true},
		{"succeeded", rec(workflows.StatusSucceeded, 0), nil, false},
		{"failed", rec(workflows.StatusFailed, 0), nil, false},
		{"cancelled", rec(workflows.StatusCancelled, 0), nil, false},
	} {
		if got := keepContainer(tc.rec, tc.err, now, 15*time.Second); got != tc.keep {
			t.Errorf("%s: keep = %v, want %v", tc.name, got, tc.keep)
		}
	}
}
