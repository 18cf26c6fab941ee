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
	srv, baseURL, backlog, stop, err := startMemoryChild(ctx, cfg, dir)
	if err != nil {
		return err
	}
	defer stop()
	// Both readings are taken after the same quiet time: serve returns
	// the heap of a burst of work to the OS once it has been quiet for
	// 15 s (cmd/hookrun/memory.go), start-up included.
	settle, quiet := 3*time.Second, 20*time.Second
	if cfg.Quick {
		settle, quiet = time.Second, time.Second
	}
	time.Sleep(quiet)
	idle, err := readRSS(srv.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("reading idle rss: %w", err)
	}

	start := time.Now()
	deadline := start.Add(cfg.MemoryBudget)
	accepted, err := sendMemoryRuns(ctx, cfg, srv, baseURL, backlog, deadline)
	if err != nil {
		return err
	}
	// Let the runner finish what was accepted (bounded beyond the budget).
	left, err := drainBacklog(backlog, time.Now().Add(max(time.Until(deadline), 0)+15*time.Second))
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	time.Sleep(settle)
	after, err := readRSS(srv.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("reading rss after the runs: %w", err)
	}
	liveAfter := lastLiveHeap(srv.tail())
	time.Sleep(quiet - settle)
	settled, err := readRSS(srv.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("reading rss after the runs: %w", err)
	}
	m := Memory{
		IdleRSSMiB:      float64(idle.Total) / mib,
		IdleAnonMiB:     float64(idle.Anon) / mib,
		IdleFileMiB:     float64(idle.File) / mib,
		AfterRunsRSSMiB: float64(after.Total) / mib,
		SettledRSSMiB:   float64(settled.Total) / mib,
		SettledAnonMiB:  float64(settled.Anon) / mib,
		SettledFileMiB:  float64(settled.File) / mib,
		LiveHeapMiB:     liveAfter,
		Ratio:           float64(settled.Total) / float64(idle.Total),
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

// startMemoryChild starts the `hookrun serve` child of runMemory on ports
// the bench knows, waits until it is ready and connects to its embedded
// NATS server: backlog counts the runs queued, stop ends it all.
func startMemoryChild(ctx context.Context, cfg *Config, dir string) (srv *child, baseURL string, backlog func() (int, error), stop func(), err error) {
	httpAddr, err := freePort()
	if err != nil {
		return nil, "", nil, nil, err
	}
	natsAddr, err := freePort()
	if err != nil {
		return nil, "", nil, nil, err
	}
	// The stack of the other phases, as a `hookrun serve` child.
	sc := benchConfig(dir)
	sc.Listen, sc.NATS.Listen = httpAddr, natsAddr
	sc.Runner.Concurrency = 8
	sc.Log = app.LogConfig{Level: "warn", Format: "json"}
	if err := writeWorkflows(sc, map[string]string{"bench-memory.yaml": noopWorkflow("bench-memory")}); err != nil {
		return nil, "", nil, nil, err
	}
	cfgPath := filepath.Join(dir, "hookrun.yaml")
	if err := writeConfig(cfgPath, sc); err != nil {
		return nil, "", nil, nil, err
	}
	// gctrace: the child's live heap after each GC, to tell garbage the
	// runtime has not returned yet from state the process keeps.
	srv, err = startChild(ctx, cfg.Binary, []string{"GODEBUG=gctrace=1"}, "serve", "--config", cfgPath)
	if err != nil {
		return nil, "", nil, nil, err
	}
	baseURL = "http://" + httpAddr
	if err := waitReady(ctx, srv, baseURL+"/readyz", 60*time.Second); err != nil {
		srv.stop()
		return nil, "", nil, nil, err
	}
	backlog, closeNATS, err := streamBacklog(ctx, natsAddr, sc.DataDir)
	if err != nil {
		srv.stop()
		return nil, "", nil, nil, err
	}
	return srv, baseURL, backlog, func() { closeNATS(); srv.stop() }, nil
}

// streamBacklog connects to the child's NATS server at natsAddr (with the
// password it generated under dataDir) and answers how many messages the
// runs stream holds.
func streamBacklog(ctx context.Context, natsAddr, dataDir string) (func() (int, error), func(), error) {
	pw, err := os.ReadFile(filepath.Join(dataDir, "nats", queue.DefaultPasswordFileName))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the child's nats password: %w", err)
	}
	nc, err := nats.Connect("nats://"+natsAddr, nats.Name("hookrun-bench"), nats.UserInfo(queue.DefaultUser, strings.TrimSpace(string(pw))))
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the child's nats: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("creating jetstream context: %w", err)
	}
	stream, err := js.Stream(ctx, queue.StreamRuns)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("looking up %s: %w", queue.StreamRuns, err)
	}
	return func() (int, error) {
		info, err := stream.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("reading %s state: %w", queue.StreamRuns, err)
		}
		return int(info.State.Msgs), nil
	}, nc.Close, nil
}

// sendMemoryRuns sends cfg.MemoryRuns deliveries to the child at baseURL
// in batches, waiting while the backlog is over memoryBacklog, until
// deadline; accepted is how many it sent.
func sendMemoryRuns(ctx context.Context, cfg *Config, srv *child, baseURL string, backlog func() (int, error), deadline time.Time) (accepted int, err error) {
	snd := newSender(baseURL)
	defer snd.close()
	for accepted < cfg.MemoryRuns && time.Now().Before(deadline) {
		for {
			n, err := backlog()
			if err != nil {
				return accepted, err
			}
			if n <= memoryBacklog || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		batch := min(memoryBatch, cfg.MemoryRuns-accepted)
		r := closedLoop(ctx, 16, batch, func(ctx context.Context, _ int) error { return snd.accept(ctx) })
		if r.Errors > 0 {
			return accepted, fmt.Errorf("%d of %d deliveries were not accepted (server output: %s)", r.Errors, batch, srv.tail())
		}
		accepted += batch
		if srv.exited() {
			return accepted, fmt.Errorf("hookrun serve exited: %s", srv.tail())
		}
	}
	return accepted, nil
}

// drainBacklog waits until the backlog is empty or drainBy has passed,
// and answers what is left.
func drainBacklog(backlog func() (int, error), drainBy time.Time) (int, error) {
	for {
		left, err := backlog()
		if err != nil {
			return 0, err
		}
		if left == 0 || time.Now().After(drainBy) {
			return left, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
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
			return fmt.Errorf("the server exited during startup: %s", c.tail())
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
