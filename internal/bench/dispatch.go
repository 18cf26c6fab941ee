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

	"github.com/hookrun/hookrun/providers/git"
	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner"
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

// openDispatchStack opens the stack with the stamping workflow; its step
// writes into the returned stamps directory, which lies outside dir and is
// writable by anyone: a `hookrun runner` started as root runs the step as
// its unprivileged step user.
func openDispatchStack(ctx context.Context, cfg *Config, dir string) (stamps string, s *stack, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("creating bench dir: %w", err)
	}
	if stamps, err = os.MkdirTemp("", "hookrun-bench-stamps-"); err != nil {
		return "", nil, fmt.Errorf("creating stamp dir: %w", err)
	}
	if err := os.Chmod(stamps, 0o777); err != nil {
		return "", nil, fmt.Errorf("creating stamp dir: %w", err)
	}
	s, err = openStack(ctx, dir, cfg.Logger, map[string]string{"bench-dispatch.yaml": fmt.Sprintf(dispatchWorkflow, stamps)})
	if err != nil {
		_ = os.RemoveAll(stamps)
		return "", nil, err
	}
	s.cleanup = append(s.cleanup, func() { _ = os.RemoveAll(stamps) })
	return stamps, s, nil
}

func dispatchInProcess(ctx context.Context, cfg *Config, dir string) (DispatchRow, error) {
	stamps, s, err := openDispatchStack(ctx, cfg, dir)
	if err != nil {
		return DispatchRow{}, err
	}
	defer s.close()
	ws, err := git.New(git.Config{DataDir: filepath.Join(dir, "data")})
	if err != nil {
		return DispatchRow{}, fmt.Errorf("configuring workspaces: %w", err)
	}
	engine, err := runner.NewEngine(runner.EngineConfig{
		Providers: runner.Providers{Host: host.New(host.Config{})},
		Logs:      s.q.Logs(),
		Logger:    cfg.Logger,
	})
	if err != nil {
		return DispatchRow{}, fmt.Errorf("configuring engine: %w", err)
	}
	r, err := runner.New(runner.Config{Logger: cfg.Logger}, runner.Deps{
		Runs: s.q.Runs(), Workflows: s.set, Workspaces: ws, Engine: engine,
	})
	if err != nil {
		return DispatchRow{}, fmt.Errorf("configuring runner: %w", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumer, err := r.Start(rctx, s.q)
	if err != nil {
		return DispatchRow{}, fmt.Errorf("starting runner: %w", err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = consumer.Close(cctx)
		ccancel()
	}()
	return timeDispatch(ctx, cfg.DispatchRuns, s.url, stamps)
}

func dispatchSeparate(ctx context.Context, cfg *Config, dir string) (DispatchRow, error) {
	stamps, s, err := openDispatchStack(ctx, cfg, dir)
	if err != nil {
		return DispatchRow{}, err
	}
	defer s.close()
	child, err := startChild(ctx, cfg.Binary, nil, "runner",
		"--nats-url", s.q.ClientURL(),
		"--workflows", filepath.Join(dir, "workflows"),
		"--data-dir", filepath.Join(dir, "runner"),
		"--log-level", "warn", "--log-format", "json")
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
