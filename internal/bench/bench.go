package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hookrun/hookrun/providers/git"
)

// payload is GitHub's documented pull_request "opened" example (about 28 KB,
// MIT, see testdata/LICENSE): the body every ingest phase sends.
//
//go:embed testdata/pull_request.opened.json
var payload []byte

// Config says what to run and how much of it.
type Config struct {
	// Binary is the hookrun executable spawned for the separate-process
	// dispatch, `hookrun run` and memory phases. Required.
	Binary string
	// Quick runs small counts (seconds in all) for tests; the figures are
	// then only a smoke check.
	Quick bool
	// Concurrency lists the closed-loop concurrencies of the ingest phases.
	// Default 1, 8, 64.
	Concurrency []int
	// IngestOps is how many publishes / deliveries each closed loop makes.
	// Default 4000 (quick: 150).
	IngestOps int
	// OpenRate is the open loop's fixed delivery rate per second. Default 500.
	OpenRate int
	// OpenDuration is how long the open loop sends. Default 10s (quick: 1s).
	OpenDuration time.Duration
	// DispatchRuns is how many sequential deliveries each dispatch phase
	// times. Default 100 (quick: 10).
	DispatchRuns int
	// EngineRepeats is how often the engine chain and the plain loop are
	// each repeated; medians are compared. Default 20 (quick: 5).
	EngineRepeats int
	// CLIRepeats is how often `hookrun run` and the shell loop are each
	// repeated. Default 10 (quick: 3).
	CLIRepeats int
	// MemoryRuns is how many runs go through the `hookrun serve` child
	// before its RSS is read again. Default 10000 (quick: 50).
	MemoryRuns int
	// MemoryBudget bounds the memory phase's sending and waiting; when it
	// runs out, the runs processed so far are reported. Default 90s
	// (quick: 20s).
	MemoryBudget time.Duration
	// Only names the phases to run (ingest, durability, dispatch, engine, run_cli,
	// memory); empty runs them all. Targets of skipped phases are not judged.
	Only []string
	// Progress receives one line per phase as it starts; nil: discarded.
	Progress io.Writer
	// Logger receives the in-process servers' logs; default: warnings and
	// errors only, to stderr.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	pick := func(full, quick int) int {
		if c.Quick {
			return quick
		}
		return full
	}
	if len(c.Concurrency) == 0 {
		c.Concurrency = []int{1, 8, 64}
	}
	if c.IngestOps == 0 {
		c.IngestOps = pick(4000, 150)
	}
	if c.OpenRate == 0 {
		c.OpenRate = 500
	}
	if c.OpenDuration == 0 {
		c.OpenDuration = time.Duration(pick(10, 1)) * time.Second
	}
	if c.DispatchRuns == 0 {
		c.DispatchRuns = pick(100, 10)
	}
	if c.EngineRepeats == 0 {
		c.EngineRepeats = pick(20, 5)
	}
	if c.CLIRepeats == 0 {
		c.CLIRepeats = pick(10, 3)
	}
	if c.MemoryRuns == 0 {
		c.MemoryRuns = pick(10000, 50)
	}
	if c.MemoryBudget == 0 {
		c.MemoryBudget = time.Duration(pick(90, 20)) * time.Second
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
}

// Validate reports a configuration the bench cannot run with.
func (c *Config) Validate() error {
	var errs []error
	if c.Binary == "" {
		errs = append(errs, errors.New("binary: the hookrun executable is required"))
	} else if _, err := os.Stat(c.Binary); err != nil {
		errs = append(errs, fmt.Errorf("binary: %w", err))
	}
	for _, n := range c.Concurrency {
		if n < 1 {
			errs = append(errs, fmt.Errorf("concurrency must be at least 1, got %d", n))
		}
	}
	if c.IngestOps < 1 || c.OpenRate < 1 || c.OpenDuration <= 0 || c.DispatchRuns < 1 ||
		c.EngineRepeats < 1 || c.CLIRepeats < 1 || c.MemoryRuns < 1 || c.MemoryBudget <= 0 {
		errs = append(errs, errors.New("counts, rates and durations must be positive"))
	}
	for _, name := range c.Only {
		if !slices.Contains(phaseNames, name) {
			errs = append(errs, fmt.Errorf("only: unknown phase %q (phases: %s)", name, strings.Join(phaseNames, ", ")))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("validating bench config: %w", err)
	}
	return nil
}

// Report is everything one bench run measured; its JSON keys name what
// they measure so that runs compare across commits.
type Report struct {
	Quick      bool        `json:"quick"`      // small counts: a smoke check, not a measurement
	Phases     []string    `json:"phases"`     // the phases that ran
	Machine    Machine     `json:"machine"`    // where it ran
	Ingest     []IngestRow `json:"ingest"`     // one row per closed-loop concurrency
	OpenLoop   OpenLoop    `json:"open_loop"`  // fixed-rate deliveries
	Durability Durability  `json:"durability"` // ingest with the store synced every 2 min vs before each ack
	Dispatch   Dispatch    `json:"dispatch"`   // HTTP send → first step's process start
	Engine     Engine      `json:"engine"`     // 10-step chain in the engine vs a plain Go loop
	RunCLI     RunCLI      `json:"run_cli"`    // whole `hookrun run` vs a shell loop
	Memory     Memory      `json:"memory"`     // RSS of a `hookrun serve` child
	Targets    []Target    `json:"targets"`    // the targets, judged
	Elapsed    float64     `json:"elapsed_s"`  // wall time of the whole bench
}

// Machine describes where the bench ran.
type Machine struct {
	CPUs        int     `json:"cpus"`           // runtime.NumCPU
	GoVersion   string  `json:"go_version"`     // runtime.Version
	PayloadSize int     `json:"payload_bytes"`  // size of the delivery body
	LoadStart   float64 `json:"load_avg_start"` // 1-minute load average when the bench started
	LoadEnd     float64 `json:"load_avg_end"`   // and when it ended (other work on the machine shows here)
	// UnjournaledScratch is the device of the scratch directory's file
	// system (the servers' data_dir) when it is ext4 without a journal,
	// where every run's directories cost more (git.UnjournaledExt4).
	UnjournaledScratch string `json:"scratch_unjournaled_ext4,omitempty"`
	// ScratchDiscard says that file system is mounted with discard, so
	// each directory a run removes there waits for the device.
	ScratchDiscard bool `json:"scratch_discard,omitempty"`
}

// newMachine describes this machine, the load average now and the scratch
// directory's file system.
func newMachine(payloadSize int) Machine {
	dev, discard := git.UnjournaledExt4(os.TempDir())
	return Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), PayloadSize: payloadSize, LoadStart: loadAvg(),
		UnjournaledScratch: dev, ScratchDiscard: discard}
}

// scratchNote is a line that says the scratch directory lies on ext4
// without a journal, or "".
func (m Machine) scratchNote() string {
	if m.UnjournaledScratch == "" {
		return ""
	}
	fs, cost := "", "every run's directories cost more there"
	if m.ScratchDiscard {
		fs, cost = ", mounted with discard", cost+", and each one removed waits for the device to discard its block"
	}
	return fmt.Sprintf("scratch directory (the servers' data_dir, the engine's folders) on ext4 without a journal (%s)%s: %s;\n"+
		"set TMPDIR to a directory on a journaled file system to measure there (docs/operations.md, \"The file system under data_dir\")\n", m.UnjournaledScratch, fs, cost)
}

// IngestRow compares ingress with the raw JetStream floor at one concurrency.
type IngestRow struct {
	Concurrency    int     `json:"concurrency"`       // closed-loop workers
	Ops            int     `json:"ops"`               // publishes and deliveries each
	FloorPerSec    float64 `json:"floor_per_sec"`     // (a) raw synchronous JetStream publishes per second, in-process as ingress publishes
	FloorTCPPerSec float64 `json:"floor_tcp_per_sec"` // (a') the same over loopback TCP, for reference
	FloorP50       Millis  `json:"floor_p50_ms"`      // (a) latency percentiles
	FloorP99       Millis  `json:"floor_p99_ms"`      //
	PerSec         float64 `json:"per_sec"`           // (b) signed deliveries per second through HTTP ingress
	P50            Millis  `json:"p50_ms"`            // (b) latency percentiles
	P99            Millis  `json:"p99_ms"`            //
	P999           Millis  `json:"p999_ms"`           //
	Ratio          float64 `json:"ratio"`             // PerSec / FloorPerSec (judged)
	RatioTCP       float64 `json:"ratio_tcp"`         // PerSec / FloorTCPPerSec
	Errors         int     `json:"errors"`            // failed publishes plus non-202 answers
	FloorErrors    int     `json:"floor_errors"`      // failed raw publishes
	BytesPerRun    int     `json:"run_msg_bytes"`     // size of one run request on HOOKRUN_RUNS
}

// OpenLoop is the fixed-rate run: latency from each delivery's scheduled
// start, so a slow server shows up as latency rather than a lower rate.
type OpenLoop struct {
	RatePerSec int     `json:"rate_per_sec"`          // scheduled deliveries per second
	Duration   float64 `json:"duration_s"`            // how long it sent
	Sent       int     `json:"sent"`                  // deliveries sent
	P50        Millis  `json:"p50_ms"`                //
	P99        Millis  `json:"p99_ms"`                //
	P999       Millis  `json:"p999_ms"`               //
	Max        Millis  `json:"max_ms"`                //
	Refused    int     `json:"refused"`               // answers other than 202, and transport errors
	FirstError string  `json:"first_error,omitempty"` // what the first refused delivery got
}

// Durability compares HTTP ingest under the embedded store's two sync
// settings (nats.sync), measured in the same run.
type Durability struct {
	Concurrency    int     `json:"concurrency"`      // closed-loop workers
	Ops            int     `json:"ops"`              // deliveries per measurement (two of each setting)
	IntervalPerSec float64 `json:"interval_per_sec"` // sync every 2m (nats-server's default)
	AlwaysPerSec   float64 `json:"always_per_sec"`   // sync before every acknowledgement
	Default        string  `json:"default"`          // hookrun's default nats.sync (queue.DefaultSync)
	DefaultPerSec  float64 `json:"default_per_sec"`  // ingest with it
	IntervalP99    Millis  `json:"interval_p99_ms"`  // worse of the two measurements
	AlwaysP99      Millis  `json:"always_p99_ms"`    //
	Ratio          float64 `json:"ratio"`            // AlwaysPerSec / IntervalPerSec (judged: >= 0.5 keeps always the default)
}

// Dispatch times HTTP send → first step's process start.
type Dispatch struct {
	InProcess       DispatchRow `json:"in_process"`       // queue, ingress and runner in this process
	SeparateProcess DispatchRow `json:"separate_process"` // a `hookrun runner` child on the embedded server's TCP port
}

// DispatchRow is one dispatch measurement.
type DispatchRow struct {
	Runs int    `json:"runs"` // sequential deliveries timed
	P50  Millis `json:"p50_ms"`
	P99  Millis `json:"p99_ms"`
	Max  Millis `json:"max_ms"`
}

// Engine compares the engine running a chain of `true` steps on the host
// with the same processes started by a plain Go loop.
type Engine struct {
	Steps    int     `json:"steps"`     // steps in the chain
	Repeats  int     `json:"repeats"`   // medians over this many of each
	EngineMs float64 `json:"engine_ms"` // median engine.Engine.Run of the chain
	LoopMs   float64 `json:"loop_ms"`   // median of the plain exec.Command loop
	Ratio    float64 `json:"ratio"`     // EngineMs / LoopMs
}

// RunCLI compares a whole `hookrun run` of the chain with a shell loop.
type RunCLI struct {
	Repeats int     `json:"repeats"`       // medians over this many of each
	RunMs   float64 `json:"run_ms"`        // median wall time of `hookrun run chain.yaml`
	ShellMs float64 `json:"shell_loop_ms"` // median of sh -c 'for ...; do sh -c true; done'
	Ratio   float64 `json:"ratio"`         // RunMs / ShellMs
}

// Memory is the RSS of a `hookrun serve` child.
type Memory struct {
	IdleRSSMiB      float64 `json:"idle_rss_mib"`       // 20 s after startup (quiet)
	IdleAnonMiB     float64 `json:"idle_anon_mib"`      // of IdleRSSMiB: anonymous (heap, stacks, runtime)
	IdleFileMiB     float64 `json:"idle_file_mib"`      // of IdleRSSMiB: mapped files (the binary's code and data)
	AfterRunsRSSMiB float64 `json:"after_runs_rss_mib"` // 3 s after Runs processed runs (the tail of the work)
	SettledRSSMiB   float64 `json:"settled_rss_mib"`    // 20 s after the last run (quiet again, as IdleRSSMiB)
	SettledAnonMiB  float64 `json:"settled_anon_mib"`   // of SettledRSSMiB: anonymous
	SettledFileMiB  float64 `json:"settled_file_mib"`   // of SettledRSSMiB: mapped files
	LiveHeapMiB     float64 `json:"live_heap_mib"`      // live Go heap at the child's last GC before AfterRunsRSSMiB (gctrace)
	Ratio           float64 `json:"ratio"`              // SettledRSSMiB / IdleRSSMiB
	Runs            int     `json:"runs"`               // runs processed (accepted and acked)
	TargetRuns      int     `json:"target_runs"`        // runs the phase aimed for
	RunsPerSec      float64 `json:"runs_per_sec"`       // end-to-end throughput of the child
	Note            string  `json:"note,omitempty"`     // why Runs < TargetRuns, if it is
}

// Target is one of the targets, judged against this run.
type Target struct {
	Name     string  `json:"name"`     // what is measured
	Target   string  `json:"target"`   // the bound, as the issue states it
	Measured float64 `json:"measured"` // the figure
	Unit     string  `json:"unit"`     // of Measured
	Met      bool    `json:"met"`      //
}

// phases are the bench's phases, in the order they run.
var phases = []struct {
	name string
	run  func(ctx context.Context, cfg *Config, dir string, rep *Report) error
}{
	{"ingest", runIngest},
	{"durability", runDurability},
	{"dispatch", runDispatch},
	{"engine", runEngine},
	{"run_cli", runCLI},
	{"memory", runMemory},
}

// phaseNames are the names Config.Only accepts.
var phaseNames = func() []string {
	var ns []string
	for _, p := range phases {
		ns = append(ns, p.name)
	}
	return ns
}()

// Run runs every phase in order and returns the report. A phase that fails
// ends the bench with its error.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &Report{Quick: cfg.Quick, Machine: newMachine(len(payload))}
	tmp, err := os.MkdirTemp("", "hookrun-bench-")
	if err != nil {
		return nil, fmt.Errorf("creating scratch dir: %w", err)
	}
	defer os.RemoveAll(tmp)

	for _, p := range phases {
		if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, p.name) {
			continue
		}
		rep.Phases = append(rep.Phases, p.name)
		fmt.Fprintf(cfg.Progress, "bench: %s…\n", p.name)
		dir, err := os.MkdirTemp(tmp, p.name+"-")
		if err != nil {
			return nil, fmt.Errorf("creating scratch dir: %w", err)
		}
		t0 := time.Now()
		if err := p.run(ctx, &cfg, dir, rep); err != nil {
			return nil, fmt.Errorf("running the %s phase: %w", p.name, err)
		}
		fmt.Fprintf(cfg.Progress, "bench: %s done in %.1fs\n", p.name, time.Since(t0).Seconds())
		_ = os.RemoveAll(dir)
	}
	rep.Targets = judge(rep)
	rep.Machine.LoadEnd = loadAvg()
	rep.Elapsed = time.Since(start).Seconds()
	return rep, nil
}

// loadAvg is the 1-minute load average, 0 when unknown.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscan(string(data), &l)
	return l
}
