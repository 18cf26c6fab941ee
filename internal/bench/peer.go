package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The peer comparison (`hookrun bench peer`, `make bench-peer`): `hookrun
// serve` and adnanh/webhook, a command-per-request webhook server, each
// started fresh, in the same run, alternating, on the same signed payload.
// Both run the same one-line shell command per delivery: a hookrun
// workflow's one `run:` step, webhook's one-line `#!/bin/sh` script. The
// command writes a line into a fifo the bench reads, which is how the bench
// sees a run start (dispatch) and counts the runs that finished (drained).

const (
	// PeerHookrun and PeerWebhook name the compared servers in a PeerRow.
	PeerHookrun = "hookrun"
	PeerWebhook = "webhook"

	drainConcurrency = 8  // closed-loop workers of the drain phase
	burstConcurrency = 64 // and of the burst phase
	peerWarmup       = 3  // deliveries before anything is timed
	// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100
	// on every Linux architecture Go supports).
	clockTicks = 100
)

// PeerConfig says what the peer comparison runs and how much of it.
type PeerConfig struct {
	// Binary is the hookrun executable whose `serve` is measured. Required.
	Binary string
	// Webhook is the adnanh/webhook executable (or anything that takes its
	// -hooks, -ip and -port flags and its hooks.json). Required.
	Webhook string
	// Quick runs small counts (seconds per server) for tests.
	Quick bool
	// Rounds: each runs both servers, the first server alternating
	// (hookrun, webhook, then webhook, hookrun, ...). Default 2.
	Rounds int
	// DispatchRuns is how many sequential deliveries are timed from the
	// request to the command's start. Default 100 (quick: 5).
	DispatchRuns int
	// SerialOps is how many deliveries the concurrency-1 loop sends.
	// Default 300 (quick: 10).
	SerialOps int
	// DrainOps is how many deliveries the concurrency-8 loop sends before
	// the bench waits for every run to finish; the CPU per delivery is
	// measured over this phase. Default 2000 (quick: 20).
	DrainOps int
	// BurstOps is how many deliveries the concurrency-64 loop sends.
	// Default 1000 (quick: 64).
	BurstOps int
	// Budget bounds each wait for runs to finish. Default 120s (quick: 30s).
	Budget time.Duration
	// Progress receives a line per server and phase; nil: discarded.
	Progress io.Writer
}

func (c *PeerConfig) setDefaults() {
	pick := func(full, quick int) int {
		if c.Quick {
			return quick
		}
		return full
	}
	setDefault(&c.Rounds, 2)
	setDefault(&c.DispatchRuns, pick(100, 5))
	setDefault(&c.SerialOps, pick(300, 10))
	setDefault(&c.DrainOps, pick(2000, 20))
	setDefault(&c.BurstOps, pick(1000, 64))
	setDefault(&c.Budget, time.Duration(pick(120, 30))*time.Second)
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// Validate reports a configuration the comparison cannot run with.
func (c *PeerConfig) Validate() error {
	var errs []error
	for _, b := range []struct{ name, path string }{{"binary", c.Binary}, {"webhook", c.Webhook}} {
		if b.path == "" {
			errs = append(errs, fmt.Errorf("%s: the executable is required", b.name))
		} else if _, err := os.Stat(b.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.name, err))
		}
	}
	if c.Rounds < 1 || c.DispatchRuns < 1 || c.SerialOps < 1 || c.DrainOps < 1 || c.BurstOps < 1 || c.Budget <= 0 {
		errs = append(errs, errors.New("rounds, counts and budget must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("validating peer bench config: %w", err)
	}
	return nil
}

// PeerReport is what one peer comparison measured.
type PeerReport struct {
	Quick        bool      `json:"quick"`         // small counts: a smoke check, not a measurement
	Machine      Machine   `json:"machine"`       // where it ran, load average at start and end
	DispatchRuns int       `json:"dispatch_runs"` // sequential deliveries timed
	SerialOps    int       `json:"serial_ops"`    // deliveries at concurrency 1
	DrainOps     int       `json:"drain_ops"`     // deliveries at concurrency 8, drained
	BurstOps     int       `json:"burst_ops"`     // deliveries at concurrency 64
	Rows         []PeerRow `json:"rows"`          // one per server and round, in the order they ran
	Elapsed      float64   `json:"elapsed_s"`     // wall time of the whole comparison
}

// PeerRow is one server's figures in one round.
type PeerRow struct {
	Server string `json:"server"` // PeerHookrun or PeerWebhook
	Round  int    `json:"round"`  // 1-based
	// CPUPerDelivery is the CPU time of the server and all its children
	// (the runs) over the drain phase, per delivery.
	CPUPerDelivery Millis `json:"cpu_per_delivery_ms"`
	// DrainedPerSec: DrainOps deliveries sent at concurrency 8, divided by
	// the time from the first send until the last run's command started.
	DrainedPerSec float64 `json:"drained_runs_per_sec"`
	SerialPerSec  float64 `json:"serial_per_sec"`  // accepted deliveries per second at concurrency 1
	DispatchP50   Millis  `json:"dispatch_p50_ms"` // request sent → command started
	DispatchP99   Millis  `json:"dispatch_p99_ms"` //
	BurstPerSec   float64 `json:"burst_per_sec"`   // accepted deliveries per second at concurrency 64
	BurstAccepted int     `json:"burst_accepted"`  // of BurstOps
	BurstP99      Millis  `json:"burst_p99_ms"`    // answer latency at concurrency 64
	LoadStart     float64 `json:"load_avg_start"`  // 1-minute load average when this server started
	LoadEnd       float64 `json:"load_avg_end"`    // and when it stopped
}

// peerServer starts one of the compared servers under dir, its command
// writing into fifo; it returns the process and the base URL whose
// /hooks/github takes the sender's deliveries.
type peerServer struct {
	name  string
	start func(ctx context.Context, cfg *PeerConfig, dir, fifo string) (*child, string, error)
}

var peerServers = [2]peerServer{{PeerHookrun, startHookrunPeer}, {PeerWebhook, startWebhookPeer}}

// RunPeer runs Rounds rounds of both servers and returns the report.
func RunPeer(ctx context.Context, cfg PeerConfig) (*PeerReport, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &PeerReport{
		Quick:        cfg.Quick,
		Machine:      newMachine(len(payload)),
		DispatchRuns: cfg.DispatchRuns, SerialOps: cfg.SerialOps, DrainOps: cfg.DrainOps, BurstOps: cfg.BurstOps,
	}
	for round := 1; round <= cfg.Rounds; round++ {
		order := peerServers
		if round%2 == 0 {
			order[0], order[1] = order[1], order[0]
		}
		for _, srv := range order {
			fmt.Fprintf(cfg.Progress, "bench peer: round %d, %s…\n", round, srv.name)
			row, err := measurePeer(ctx, &cfg, srv)
			if err != nil {
				return nil, fmt.Errorf("measuring %s in round %d: %w", srv.name, round, err)
			}
			row.Round = round
			rep.Rows = append(rep.Rows, row)
			fmt.Fprintf(cfg.Progress, "bench peer:   %s: cpu %.2f ms/delivery, drained %.0f runs/s, c=1 %.0f/s, dispatch p50 %.1f ms, c=64 %.0f/s p99 %.1f ms\n",
				srv.name, row.CPUPerDelivery, row.DrainedPerSec, row.SerialPerSec, row.DispatchP50, row.BurstPerSec, row.BurstP99)
		}
	}
	rep.Machine.LoadEnd = loadAvg()
	rep.Elapsed = time.Since(start).Seconds()
	return rep, nil
}

// measurePeer starts srv fresh and runs every phase against it.
func measurePeer(ctx context.Context, cfg *PeerConfig, srv peerServer) (row PeerRow, err error) {
	row = PeerRow{Server: srv.name, LoadStart: loadAvg()}
	dir, err := os.MkdirTemp("", "hookrun-bench-peer-")
	if err != nil {
		return row, fmt.Errorf("creating scratch dir: %w", err)
	}
	defer os.RemoveAll(dir)
	// World-writable: hookrun started as root runs its steps as the
	// unprivileged step user.
	if err := os.Chmod(dir, 0o777); err != nil {
		return row, fmt.Errorf("creating scratch dir: %w", err)
	}
	mk, err := openMarks(filepath.Join(dir, "marks"))
	if err != nil {
		return row, err
	}
	defer mk.close()
	c, baseURL, err := srv.start(ctx, cfg, dir, mk.path)
	if err != nil {
		return row, err
	}
	defer c.stop()
	if err := waitReady(ctx, c, baseURL+readyPath(srv.name), 60*time.Second); err != nil {
		return row, err
	}
	snd := newSender(baseURL)
	defer snd.close()
	p := &peerPhases{cfg: cfg, snd: snd, mk: mk, pid: c.cmd.Process.Pid}
	for _, phase := range []func(context.Context, *PeerRow) error{p.warmup, p.dispatch, p.serial, p.drained, p.burst} {
		if err := phase(ctx, &row); err != nil {
			return row, fmt.Errorf("%w (server output: %s)", err, c.tail())
		}
	}
	row.LoadEnd = loadAvg()
	return row, nil
}

// peerPhases measures one running server.
type peerPhases struct {
	cfg  *PeerConfig
	snd  *sender
	mk   *marks
	pid  int // the server's, root of the process tree whose CPU counts
	done int // commands awaited so far
}

// drain waits for the commands of n more deliveries and returns when the
// last of them started.
func (p *peerPhases) drain(ctx context.Context, n int) (time.Time, error) {
	p.done += n
	return p.mk.wait(ctx, p.done, p.cfg.Budget)
}

// loop sends n deliveries from c workers and fails unless all were
// accepted.
func (p *peerPhases) loop(ctx context.Context, c, n int) (loopResult, error) {
	r := closedLoop(ctx, c, n, func(ctx context.Context, _ int) error { return p.snd.accept(ctx) })
	if r.Errors > 0 {
		return r, fmt.Errorf("concurrency %d: %d of %d deliveries were not accepted (first: %s)", c, r.Errors, r.Ops, r.FirstErr)
	}
	return r, nil
}

func (p *peerPhases) warmup(ctx context.Context, _ *PeerRow) error {
	for range peerWarmup {
		if err := p.snd.accept(ctx); err != nil {
			return fmt.Errorf("warming up: %w", err)
		}
	}
	if _, err := p.drain(ctx, peerWarmup); err != nil {
		return fmt.Errorf("warming up: %w", err)
	}
	return nil
}

// dispatch: one delivery at a time, request sent → command started.
func (p *peerPhases) dispatch(ctx context.Context, row *PeerRow) error {
	lat := make([]time.Duration, 0, p.cfg.DispatchRuns)
	for range p.cfg.DispatchRuns {
		sent := time.Now()
		if err := p.snd.accept(ctx); err != nil {
			return fmt.Errorf("dispatch: %w", err)
		}
		started, err := p.drain(ctx, 1)
		if err != nil {
			return fmt.Errorf("dispatch: %w", err)
		}
		lat = append(lat, started.Sub(sent))
	}
	l := summarize(lat)
	row.DispatchP50, row.DispatchP99 = l.P50, l.P99
	return nil
}

// serial: accepted deliveries per second at concurrency 1.
func (p *peerPhases) serial(ctx context.Context, row *PeerRow) error {
	r, err := p.loop(ctx, 1, p.cfg.SerialOps)
	if err != nil {
		return err
	}
	row.SerialPerSec = r.perSecond()
	if _, err := p.drain(ctx, r.Ops); err != nil {
		return fmt.Errorf("concurrency 1: %w", err)
	}
	return nil
}

// drained: runs per second at concurrency 8 until the last command
// started, and the CPU per delivery of the server's process tree.
func (p *peerPhases) drained(ctx context.Context, row *PeerRow) error {
	cpu0, err := treeCPU(p.pid)
	if err != nil {
		return err
	}
	t0 := time.Now()
	r, err := p.loop(ctx, drainConcurrency, p.cfg.DrainOps)
	if err != nil {
		return err
	}
	last, err := p.drain(ctx, r.Ops)
	if err != nil {
		return fmt.Errorf("concurrency %d: %w", drainConcurrency, err)
	}
	row.DrainedPerSec = float64(r.Ops) / last.Sub(t0).Seconds()
	// The last commands exit, their runs are recorded and their processes
	// reaped (a child's CPU reaches its parent's cutime when waited for).
	time.Sleep(peerSettle(p.cfg))
	cpu1, err := treeCPU(p.pid)
	if err != nil {
		return err
	}
	row.CPUPerDelivery = ms((cpu1 - cpu0) / time.Duration(r.Ops))
	return nil
}

// burst: accepted deliveries per second at concurrency 64 and their p99;
// the runs of the accepted ones are drained before the server stops.
func (p *peerPhases) burst(ctx context.Context, row *PeerRow) error {
	r := closedLoop(ctx, burstConcurrency, p.cfg.BurstOps, func(ctx context.Context, _ int) error { return p.snd.accept(ctx) })
	row.BurstAccepted = r.Ops - r.Errors
	row.BurstPerSec = float64(row.BurstAccepted) / r.Elapsed.Seconds()
	row.BurstP99 = r.Latencies.P99
	if _, err := p.drain(ctx, row.BurstAccepted); err != nil {
		return fmt.Errorf("concurrency %d: %w", burstConcurrency, err)
	}
	return nil
}

// peerSettle is how long the bench waits after the last command started
// before it reads the servers' CPU again.
func peerSettle(cfg *PeerConfig) time.Duration {
	if cfg.Quick {
		return 300 * time.Millisecond
	}
	return time.Second
}

// readyPath is where a server answers 200 once it takes deliveries.
func readyPath(server string) string {
	if server == PeerHookrun {
		return "/readyz"
	}
	return "/" // webhook answers "OK" there once it listens
}

// peerWorkflow is hookrun's side: one `run:` step writing a line into
// fifo, reporting nothing back to the forge.
func peerWorkflow(fifo string) string {
	return `name: bench-peer
on:
  - event: pull_request
    actions: [opened]
    branches: [master]
report:
  comment: none
  status: false
steps:
  - id: mark
    run: echo x > ` + strconv.Quote(fifo) + "\n"
}

// peerScript is webhook's side: the same command as a one-line script.
func peerScript(fifo string) string {
	return "#!/bin/sh\necho x > " + strconv.Quote(fifo) + "\n"
}

// startHookrunPeer starts `hookrun serve` with its defaults, the bench's
// GitHub secret and the one-step workflow.
func startHookrunPeer(ctx context.Context, cfg *PeerConfig, dir, fifo string) (*child, string, error) {
	httpAddr, err := freePort()
	if err != nil {
		return nil, "", err
	}
	sc := benchConfig(dir)
	sc.Listen = httpAddr
	if err := writeWorkflows(sc, map[string]string{"bench-peer.yaml": peerWorkflow(fifo)}); err != nil {
		return nil, "", err
	}
	path := filepath.Join(dir, "hookrun.yaml")
	if err := writeConfig(path, sc); err != nil {
		return nil, "", err
	}
	c, err := startChild(ctx, cfg.Binary, nil, "serve", "--config", path)
	if err != nil {
		return nil, "", err
	}
	return c, "http://" + httpAddr, nil
}

// startWebhookPeer starts webhook on a hooks.json with the one hook
// "github" (so that its URL is /hooks/github, as hookrun's).
func startWebhookPeer(ctx context.Context, cfg *PeerConfig, dir, fifo string) (*child, string, error) {
	httpAddr, err := freePort()
	if err != nil {
		return nil, "", err
	}
	script := filepath.Join(dir, "step.sh")
	if err := os.WriteFile(script, []byte(peerScript(fifo)), 0o755); err != nil {
		return nil, "", fmt.Errorf("writing the webhook script: %w", err)
	}
	hooks, err := webhookHooks(script, dir)
	if err != nil {
		return nil, "", err
	}
	hooksPath := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(hooksPath, hooks, 0o600); err != nil {
		return nil, "", fmt.Errorf("writing hooks.json: %w", err)
	}
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return nil, "", fmt.Errorf("splitting %s: %w", httpAddr, err)
	}
	c, err := startChild(ctx, cfg.Webhook, nil, "-hooks", hooksPath, "-ip", host, "-port", port)
	if err != nil {
		return nil, "", err
	}
	return c, "http://" + httpAddr, nil
}

// webhookHook is the part of adnanh/webhook's hook definition the bench
// writes (its docs/Hook-Definition.md and docs/Hook-Rules.md).
type webhookHook struct {
	ID               string      `json:"id"`
	ExecuteCommand   string      `json:"execute-command"`
	WorkingDirectory string      `json:"command-working-directory"`
	SuccessCode      int         `json:"success-http-response-code"`
	MismatchCode     int         `json:"trigger-rule-mismatch-http-response-code"`
	TriggerRule      webhookRule `json:"trigger-rule"`
}

type webhookRule struct {
	And   []webhookRule `json:"and,omitempty"`
	Match *webhookMatch `json:"match,omitempty"`
}

type webhookMatch struct {
	Type      string       `json:"type"`
	Secret    string       `json:"secret,omitempty"`
	Value     string       `json:"value,omitempty"`
	Parameter webhookParam `json:"parameter"`
}

type webhookParam struct {
	Source string `json:"source"`
	Name   string `json:"name"`
}

// webhookHooks is webhook's hooks.json: the hook "github" runs script in
// dir, without waiting for it (as hookrun answers before its run), when
// the delivery is signed with the bench's secret in X-Hub-Signature-256 as
// GitHub signs it and is what hookrun's workflow matches (a pull_request
// opened against master); it answers 202 as hookrun does, and 400 to a
// delivery that fails the rule (webhook's default would be 200).
func webhookHooks(script, dir string) ([]byte, error) {
	match := func(m webhookMatch) webhookRule { return webhookRule{Match: &m} }
	hooks := []webhookHook{{
		ID:               "github",
		ExecuteCommand:   script,
		WorkingDirectory: dir,
		SuccessCode:      202,
		MismatchCode:     400,
		TriggerRule: webhookRule{And: []webhookRule{
			match(webhookMatch{Type: "payload-hmac-sha256", Secret: secret, Parameter: webhookParam{"header", "X-Hub-Signature-256"}}),
			match(webhookMatch{Type: "value", Value: "pull_request", Parameter: webhookParam{"header", "X-GitHub-Event"}}),
			match(webhookMatch{Type: "value", Value: "opened", Parameter: webhookParam{"payload", "action"}}),
			match(webhookMatch{Type: "value", Value: "master", Parameter: webhookParam{"payload", "pull_request.base.ref"}}),
		}},
	}}
	data, err := json.MarshalIndent(hooks, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding hooks.json: %w", err)
	}
	return data, nil
}
