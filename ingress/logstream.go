package ingress

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hookrun/hookrun/workflows"
)

// DefaultFollowGrace is how long a log stream goes on after its run ended,
// so that the run's last lines arrive.
const DefaultFollowGrace = 500 * time.Millisecond

// LogStream serves a run's output as Server-Sent Events until the run ends:
// GET /api/v1/runs/:id/logs?follow=1 and the web UI's live log (ingress/ui)
// are this one handler behind their own authentication.
type LogStream struct {
	runs  RunReader
	logs  LogReader
	grace time.Duration
}

// NewLogStream streams the lines of logs for the runs of runs; grace 0 is
// DefaultFollowGrace.
func NewLogStream(runs RunReader, logs LogReader, grace time.Duration) *LogStream {
	if grace <= 0 {
		grace = DefaultFollowGrace
	}
	return &LogStream{runs: runs, logs: logs, grace: grace}
}

// Serve streams run id's lines to c: 404 for an unknown run, 503 when the
// queue cannot be read, else `event: log` per line (data a JSON
// stores.LogLine, stored lines first) and `event: end` (data
// {"status": ...}) once the run ended.
func (ls *LogStream) Serve(c echo.Context, id string) error {
	if _, _, err := ls.runs.Get(c.Request().Context(), id); err != nil {
		return runError(c, err)
	}
	return ls.follow(c, id)
}

// follow streams the run's lines as Server-Sent Events (`event: log`, data a
// JSON LogLine) until the run reaches a terminal state, then sends
// `event: end` with the final status.
func (ls *LogStream) follow(c echo.Context, id string) error {
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	lines, err := ls.logs.Follow(ctx, id)
	if err != nil {
		return runError(c, err)
	}
	recs, err := ls.runs.Watch(ctx, id)
	if err != nil {
		return runError(c, err)
	}
	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Flush()

	var final workflows.Status
	var deadline <-chan time.Time
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return nil
			}
			data, _ := json.Marshal(l)
			fmt.Fprintf(w, "event: log\ndata: %s\n\n", data)
			w.Flush()
		case rec, ok := <-recs:
			if !ok {
				recs = nil
				continue
			}
			if rec.Status.Terminal() && deadline == nil {
				final = rec.Status
				deadline = time.After(ls.grace)
			}
		case <-deadline:
			fmt.Fprintf(w, "event: end\ndata: {\"status\":%q}\n\n", final)
			w.Flush()
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}
