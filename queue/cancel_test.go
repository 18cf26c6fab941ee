package queue

import (
	"errors"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

func TestRequestCancel(t *testing.T) {
	t.Parallel()
	q := openTest(t, Config{})
	ctx := testCtx(t, 20*time.Second)
	rs := q.Runs()
	tests := []struct {
		name       string
		status     workflows.Status // "" = no record
		wantStatus workflows.Status
		wantErr    error
	}{
		{"queued is cancelled at once", workflows.StatusQueued, workflows.StatusCancelled, nil},
		{"running gets the request", workflows.StatusRunning, workflows.StatusRunning, nil},
		{"finished stays finished", workflows.StatusSucceeded, workflows.StatusSucceeded, ErrRunFinished},
		{"missing", "", "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := NewRunID()
			if tt.status != "" {
				if _, err := rs.Create(ctx, &RunRecord{ID: id, Workflow: "w", Status: tt.status, CreatedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := rs.RequestCancel(ctx, id)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("RequestCancel: %v, want %v", err, tt.wantErr)
			}
			if tt.status == "" {
				return
			}
			rec, _, err := rs.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != tt.wantStatus {
				t.Fatalf("status %s, want %s", rec.Status, tt.wantStatus)
			}
			if want := tt.wantErr == nil; rec.CancelRequested != want {
				t.Fatalf("cancel_requested = %v, want %v", rec.CancelRequested, want)
			}
			if tt.wantStatus == workflows.StatusCancelled && (rec.FinishedAt == nil || rec.Error != ErrCancelled.Error()) {
				t.Fatalf("cancelled record %+v", rec)
			}
		})
	}
}
