package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/queue"
)

const (
	memoryBatch   = 500  // deliveries sent between backlog checks
	memoryBacklog = 1000 // the sender waits while more runs than this are queued
	mib           = 1 << 20
)

// runMemory starts a `hookrun serve` child, reads its RSS once startup has
// settled, puts MemoryRuns runs through it and reads its RSS again.
func runMemory(ctx context.Context, cfg *Config, dir string, rep *Report) error {
	httpAddr, err := freePort()
	if err != nil {
		return err
	}
	natsAddr, err := freePort()
	if err != nil {
		return err
	}
	// The stack of the other phases, as a `hookrun serve` child on ports
	// the bench knows.
	sc := benchConfig(dir)
	sc.Listen, sc.NATS.Listen = httpAddr, natsAddr
	sc.Runner.Concurrency = 8
	sc.Log = app.LogConfig{Level: "warn", Format: "json"}
	if err := writeWorkflows(sc, map[string]string{"bench-memory.yaml": noopWorkflow("bench-memory")}); err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "hookrun.yaml")
	if err := writeConfig(cfgPath, sc); err != nil {
		return err
	}
	// gctrace: the child's live heap after each GC, to tell garbage the
	// runtime has not returned yet from state the process keeps.
	srv, err := startChild(ctx, cfg.Binary, []string{"GODEBUG=gctrace=1"}, "serve", "--config", cfgPath)
	if err != nil {
		return err
	}
	defer srv.stop()
	baseURL := "http://" + httpAddr
	if err := waitReady(ctx, srv, baseURL+"/readyz", 60*time.Second); err != nil {
		return err
	}
	// Both readings are taken after the same quiet time: serve returns
	// the heap of a burst of work to the OS once it has been quiet for
	// 15 s (cmd/hookrun/memory.go), start-up included.
	settle, quiet := 3*time.Second, 20*time.Second
	if cfg.Quick {
		settle, quiet = time.Second, time.Second
	}
	time.Sleep(quiet)
	idle, err := rssBytes(srv.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("reading idle rss: %w", err)
	}

	// The child generated its embedded server's password at start.
	pw, err := os.ReadFile(filepath.Join(sc.DataDir, "nats", queue.DefaultPasswordFileName))
	if err != nil {
		return fmt.Errorf("reading the child's nats password: %w", err)
	}
	nc, err := nats.Connect("nats://"+natsAddr, nats.Name("hookrun-bench"), nats.UserInfo(queue.DefaultUser, strings.TrimSpace(string(pw))))
	if err != nil {
		return fmt.Errorf("connecting to the child's nats: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("creating jetstream context: %w", err)
	}
	stream, err := js.Stream(ctx, queue.StreamRuns)
	if err != nil {
		return fmt.Errorf("looking up %s: %w", queue.StreamRuns, err)
	}
	backlog := func() (int, error) {
		info, err := stream.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("reading %s state: %w", queue.StreamRuns, err)
		}
		return int(info.State.Msgs), nil
	}

	snd := newSender(baseURL)
	defer snd.close()
	start := time.Now()
	deadline := start.Add(cfg.MemoryBudget)
	accepted := 0
	for accepted < cfg.MemoryRuns && time.Now().Before(deadline) {
		for {
			n, err := backlog()
			if err != nil {
				return err
			}
			if n <= memoryBacklog || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		batch := min(memoryBatch, cfg.MemoryRuns-accepted)
		r := closedLoop(ctx, 16, batch, func(ctx context.Context, _ int) error { return snd.accept(ctx) })
		if r.Errors > 0 {
			return fmt.Errorf("%d of %d deliveries were not accepted (server output: %s)", r.Errors, batch, srv.tail())
		}
		accepted += batch
		if srv.exited() {
			return fmt.Errorf("hookrun serve exited: %s", srv.tail())
		}
	}
	// Let the runner finish what was accepted (bounded beyond the budget).
	drainBy := time.Now().Add(max(time.Until(deadline), 0) + 15*time.Second)
	left := 0
	for {
		if left, err = backlog(); err != nil {
			return err
		}
		if left == 0 || time.Now().After(drainBy) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	time.Sleep(settle)
	after, err := rssBytes(srv.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("reading rss after the runs: %w", err)
	}
	liveAfter := lastLiveHeap(srv.tail())
	time.Sleep(quiet - settle)
	settled, err := rssBytes(srv.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("reading rss after the runs: %w", err)
	}
	m := Memory{
		IdleRSSMiB:      float64(idle) / mib,
		AfterRunsRSSMiB: float64(after) / mib,
		SettledRSSMiB:   float64(settled) / mib,
		LiveHeapMiB:     liveAfter,
		Ratio:           float64(settled) / float64(idle),
		Runs:            accepted - left,
		TargetRuns:      cfg.MemoryRuns,
		RunsPerSec:      float64(accepted-left) / elapsed.Seconds(),
	}
	if m.Runs < m.TargetRuns {
		m.Note = fmt.Sprintf("the %s budget allowed %d of %d runs (%d accepted, %d still queued)",
			cfg.MemoryBudget, m.Runs, m.TargetRuns, accepted, left)
	}
	rep.Memory = m
	return nil
}

// gcLine matches a gctrace line's heap sizes: start->end->live MB.
var gcLine = regexp.MustCompile(`(?m)^gc \d+ @.*?(\d+)->(\d+)->(\d+) MB`)

// lastLiveHeap is the live heap (MiB) of the last GC in a gctrace output,
// 0 when there is none.
func lastLiveHeap(out string) float64 {
	all := gcLine.FindAllStringSubmatch(out, -1)
	if len(all) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(all[len(all)-1][3], 64)
	return v
}

// waitReady polls url until it answers 200, the child exits or timeout.
func waitReady(ctx context.Context, c *child, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if c.exited() {
			return fmt.Errorf("hookrun exited during startup: %s", c.tail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: timed out (output: %s)", url, c.tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort returns a loopback host:port that was free a moment ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr, nil
}
