package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hookrun/hookrun/internal/app"
)

// dispatchWorkflow's only step records, as its first act, the wall clock in
// nanoseconds into STAMPS/<run id>.
const dispatchWorkflow = `name: bench-dispatch
on:
  - event: pull_request
    actions: [opened]
    branches: [master]
steps:
  - id: stamp
    run: date +%%s%%N > "%s/$HOOKRUN_RUN_ID"
`

// dispatchWarmup deliveries run before timing starts (connections, the
// runner's consumer, the first workspace).
const dispatchWarmup = 3

// runDispatch times HTTP send → first step's process start with the runner
// in this process, then with a `hookrun runner` child process.
func runDispatch(ctx context.Context, cfg *Config, dir string, rep *Report) error {
	var err error
	rep.Dispatch.InProcess, err = dispatchInProcess(ctx, cfg, filepath.Join(dir, "in"))
	if err != nil {
		return fmt.Errorf("in process: %w", err)
	}
	rep.Dispatch.SeparateProcess, err = dispatchSeparate(ctx, cfg, filepath.Join(dir, "sep"))
	if err != nil {
		return fmt.Errorf("separate process: %w", err)
	}
	return nil
}

// openDispatchStack opens the stack of mode m with the stamping workflow;
// its step writes into the returned stamps directory, which lies outside
// dir and is writable by anyone: a hookrun started as root runs the step as
// its unprivileged step user.
func openDispatchStack(ctx context.Context, cfg *Config, dir string, m app.Mode) (stamps string, s *stack, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("creating bench dir: %w", err)
	}
	if stamps, err = os.MkdirTemp("", "hookrun-bench-stamps-"); err != nil {
		return "", nil, fmt.Errorf("creating stamp dir: %w", err)
	}
	if err := os.Chmod(stamps, 0o777); err != nil {
		return "", nil, fmt.Errorf("creating stamp dir: %w", err)
	}
	s, err = openStack(ctx, dir, cfg.Logger, m, map[string]string{"bench-dispatch.yaml": fmt.Sprintf(dispatchWorkflow, stamps)})
	if err != nil {
		_ = os.RemoveAll(stamps)
		return "", nil, err
	}
	s.cleanup = append(s.cleanup, func() { _ = os.RemoveAll(stamps) })
	return stamps, s, nil
}

// dispatchInProcess runs serve's whole stack in this process.
func dispatchInProcess(ctx context.Context, cfg *Config, dir string) (DispatchRow, error) {
	stamps, s, err := openDispatchStack(ctx, cfg, dir, app.ModeServe)
	if err != nil {
		return DispatchRow{}, err
	}
	defer s.close()
	return timeDispatch(ctx, cfg.DispatchRuns, s.url, stamps)
}

// dispatchSeparate runs the queue and ingress in this process and a
// `hookrun runner` child, configured as the in-process stack, on the
// embedded server's TCP port.
func dispatchSeparate(ctx context.Context, cfg *Config, dir string) (DispatchRow, error) {
	stamps, s, err := openDispatchStack(ctx, cfg, dir, ingestMode)
	if err != nil {
		return DispatchRow{}, err
	}
	defer s.close()
	rc := benchConfig(dir)
	rc.DataDir = filepath.Join(dir, "runner")
	rc.NATS = app.NATSConfig{URL: s.q.ClientURL(), PasswordFile: s.q.PasswordFile()}
	rc.Log = app.LogConfig{Level: "warn", Format: "json"}
	path := filepath.Join(dir, "runner.yaml")
	if err := writeConfig(path, rc); err != nil {
		return DispatchRow{}, err
	}
	child, err := startChild(ctx, cfg.Binary, nil, "runner", "--config", path)
	if err != nil {
		return DispatchRow{}, err
	}
	defer child.stop()
	row, err := timeDispatch(ctx, cfg.DispatchRuns, s.url, stamps)
	if err != nil {
		return row, fmt.Errorf("%w (runner output: %s)", err, child.tail())
	}
	return row, nil
}

// timeDispatch sends n sequential deliveries after a warm-up and, for
// each, waits for the step's stamp and compares it with the send time.
func timeDispatch(ctx context.Context, n int, baseURL, stamps string) (DispatchRow, error) {
	snd := newSender(baseURL)
	defer snd.close()
	var lat []time.Duration
	for i := 0; i < dispatchWarmup+n; i++ {
		sent := time.Now()
		code, body, err := snd.send(ctx)
		if err != nil {
			return DispatchRow{}, fmt.Errorf("sending delivery: %w", err)
		}
		if code != http.StatusAccepted {
			return DispatchRow{}, fmt.Errorf("delivery answered %d: %s", code, bytes.TrimSpace(body))
		}
		var ans struct {
			Runs []struct{ ID string } `json:"runs"`
		}
		if err := json.Unmarshal(body, &ans); err != nil || len(ans.Runs) != 1 {
			return DispatchRow{}, fmt.Errorf("reading the answer %s: want one run (%v)", bytes.TrimSpace(body), err)
		}
		// The first deliveries may wait for a child runner to come up.
		wait := 10 * time.Second
		if i == 0 {
			wait = 60 * time.Second
		}
		started, err := waitStamp(ctx, filepath.Join(stamps, ans.Runs[0].ID), wait)
		if err != nil {
			return DispatchRow{}, fmt.Errorf("run %s: %w", ans.Runs[0].ID, err)
		}
		if i >= dispatchWarmup {
			lat = append(lat, started.Sub(sent))
		}
	}
	l := summarize(lat)
	return DispatchRow{Runs: n, P50: l.P50, P99: l.P99, Max: l.Max}, nil
}

// waitStamp polls for a stamp file holding a complete line and returns the
// time it records.
func waitStamp(ctx context.Context, path string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		data, err := os.ReadFile(path)
		if err == nil && bytes.HasSuffix(data, []byte("\n")) {
			ns, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("reading stamp %q: %w", data, err)
			}
			return time.Unix(0, ns), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, errors.New("waiting for the step's stamp: timed out")
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(500 * time.Microsecond):
		}
	}
}
