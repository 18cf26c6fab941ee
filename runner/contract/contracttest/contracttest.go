package contracttest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// DefaultPath is the PATH the suite passes when Options.Env has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Options adapts the suite to an executor. Every field is optional.
type Options struct {
	// Workspace returns a directory for one subtest: hostDir is where the
	// suite writes files on this machine, dirInside is the same directory as
	// the command sees it (ExecRequest.Dir and ExecRequest.Workspace are set
	// from them). Default: a t.TempDir() for both (the host executor).
	Workspace func(t *testing.T) (hostDir, dirInside string)
	// Results returns the run's results folder for one subtest: hostDir is
	// ExecRequest.Results, where the suite looks for what the command
	// wrote, inside is $HOOKRUN_RESULTS as the command sees it. Default: a
	// t.TempDir() writable by every user, for both (the host executor).
	Results func(t *testing.T) (hostDir, inside string)
	// Env is added before the suite's own variables to every request's Env.
	// Default: PATH=DefaultPath.
	Env []workflows.EnvVar
	// Request adjusts every request before it is executed (for example to
	// set Container for the per-step container executor).
	Request func(t *testing.T, req *contract.ExecRequest)
	// StopWithin is how long Exec may take to return after its context
	// ends (plus the grace the suite asks for). Default 5s.
	StopWithin time.Duration
	// Startup is how long the executor may take before the command runs
	// (a container to create and start). The suite's timeouts and cancels
	// come this much later, so that the command has started by then.
	// Default 0.
	Startup time.Duration
}

func (o *Options) setDefaults() {
	if o.Workspace == nil {
		o.Workspace = func(t *testing.T) (string, string) {
			d := t.TempDir()
			return d, d
		}
	}
	if o.Env == nil {
		o.Env = defaultEnv()
	}
	if o.StopWithin == 0 {
		o.StopWithin = defaultStopWithin
	}
	if o.Results == nil {
		o.Results = func(t *testing.T) (string, string) {
			d := ResultsDir(t)
			return d, d
		}
	}
}

// ResultsDir is a fresh results folder that a step of any user may write
// (as its preparer hands it to the step user).
func ResultsDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

// defaultStopWithin is the default of Options.StopWithin and
// SandboxOptions.StopWithin.
const defaultStopWithin = 5 * time.Second

// defaultEnv is the default of Options.Env and SandboxOptions.Env.
func defaultEnv() []workflows.EnvVar { return []workflows.EnvVar{{Name: "PATH", Value: DefaultPath}} }

// defaultRunIDPrefix starts the run ids the suites make up.
const defaultRunIDPrefix = "contracttest-"

// newRunID returns a run id unique in this process (and across processes
// running at once), usable in container and sandbox names.
func newRunID(prefix string) string {
	return fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), callSeq.Add(1))
}

// Run runs the conformance suite against the executors newExec returns (one
// per subtest). The commands need nothing beyond a busybox-level sh, echo,
// cat, sleep, pwd, printf, env and kill, so a busybox image passes too.
func Run(t *testing.T, newExec func(t *testing.T) contract.Executor, opts Options) {
	opts.setDefaults()
	s := &suite{newExec: newExec, opts: opts}
	t.Run("ExitCodes", s.exitCodes)
	t.Run("CommandNotFound", s.commandNotFound)
	t.Run("StdoutStderrApart", s.stdoutStderrApart)
	t.Run("Env", s.env)
	t.Run("WorkingDir", s.workingDir)
	t.Run("Stdin", s.stdin)
	t.Run("NoStdin", s.noStdin)
	t.Run("Timeout", s.timeout)
	t.Run("TimeoutIgnoringSIGTERM", s.timeoutIgnoringTerm)
	t.Run("Cancel", s.cancel)
	t.Run("StoppedCommandDoesNotRunOn", s.stoppedDoesNotRunOn)
	t.Run("AlreadyCancelled", s.alreadyCancelled)
	t.Run("LargeOutput", s.largeOutput)
	t.Run("ManyLines", s.manyLines)
	t.Run("Results", s.results)
}

// resultsScript writes the results folder as a step does, then fails
// (a linter that found something): the runner side must see the files
// whatever the exit.
const resultsScript = `printf '%s\n' "$1" > "$HOOKRUN_RESULTS/x" && mkdir -p "$HOOKRUN_RESULTS/sub" && printf 'deep\n' > "$HOOKRUN_RESULTS/sub/y" && exit 3`

// results: a step writes $HOOKRUN_RESULTS/x and the runner side sees it
// in ExecRequest.Results once Exec has returned.
func (s *suite) results(t *testing.T) {
	host, inside := s.opts.Results(t)
	token := fmt.Sprintf("finding-%d", callSeq.Add(1))
	c := s.exec(t, context.Background(), contract.ExecRequest{
		Argv:    []string{"sh", "-c", resultsScript, "sh", token},
		Env:     []workflows.EnvVar{{Name: "HOOKRUN_RESULTS", Value: inside}},
		Results: host,
	})
	if c.err != nil || c.res.ExitCode != 3 {
		t.Fatalf("exit %d, err %v; want 3, nil (stderr %q)", c.res.ExitCode, c.err, c.stderr.String())
	}
	for name, want := range map[string]string{"x": token + "\n", "sub/y": "deep\n"} {
		got, err := os.ReadFile(filepath.Join(host, name))
		if err != nil || string(got) != want {
			t.Errorf("runner side %s: %q, %v; want %q", name, got, err, want)
		}
	}
}

type suite struct {
	newExec func(t *testing.T) contract.Executor
	opts    Options
}

// call is one Exec and what it produced.
type call struct {
	res            contract.ExecResult
	err            error
	stdout, stderr bytes.Buffer
	elapsed        time.Duration
}

// exec runs script with `sh -c` in a fresh workspace (or dir, when set).
func (s *suite) exec(t *testing.T, ctx context.Context, req contract.ExecRequest) *call {
	t.Helper()
	if req.Dir == "" && req.Workspace == "" {
		_, inside := s.opts.Workspace(t)
		req.Dir, req.Workspace = inside, inside
	}
	req.Env = append(append([]workflows.EnvVar(nil), s.opts.Env...), req.Env...)
	if req.RunID == "" {
		req.RunID = newRunID(defaultRunIDPrefix)
	}
	if req.StepID == "" {
		req.StepID = stepID(t.Name())
	}
	c := &call{}
	req.Stdout, req.Stderr = &c.stdout, &c.stderr
	if s.opts.Request != nil {
		s.opts.Request(t, &req)
	}
	start := time.Now()
	c.res, c.err = s.newExec(t).Exec(ctx, req)
	c.elapsed = time.Since(start)
	return c
}

var callSeq atomic.Int64

// stepID turns a test name into a step id: [a-z0-9-], at most 63 bytes.
func stepID(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.Trim(b.String(), "-")
	if len(id) > 63 {
		id = strings.Trim(id[len(id)-63:], "-")
	}
	return id
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func (s *suite) exitCodes(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{"zero", "exit 0", 0},
		{"one", "exit 1", 1},
		{"forty-two", "exit 42", 42},
		{"last command", "true; false", 1},
		{"killed by SIGKILL", "kill -9 $$", 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := s.exec(t, context.Background(), contract.ExecRequest{Argv: sh(tt.script)})
			if c.err != nil {
				t.Fatalf("Exec(%q): unexpected error %v (stderr %q)", tt.script, c.err, c.stderr.String())
			}
			if c.res.ExitCode != tt.want {
				t.Errorf("Exec(%q): exit code %d, want %d (stderr %q)", tt.script, c.res.ExitCode, tt.want, c.stderr.String())
			}
			if c.res.Duration <= 0 || c.res.Duration > c.elapsed+time.Millisecond {
				t.Errorf("Exec(%q): Duration %s, want in (0, %s]", tt.script, c.res.Duration, c.elapsed)
			}
		})
	}
}

func (s *suite) commandNotFound(t *testing.T) {
	t.Run("through sh", func(t *testing.T) {
		c := s.exec(t, context.Background(), contract.ExecRequest{Argv: sh("hookrun-no-such-command-xyz")})
		if c.err != nil {
			t.Fatalf("unexpected error %v", c.err)
		}
		if c.res.ExitCode != 127 {
			t.Errorf("exit code %d, want 127 (stderr %q)", c.res.ExitCode, c.stderr.String())
		}
	})
	t.Run("as argv[0]", func(t *testing.T) {
		// Executors differ in how they report this (an exit code like a shell,
		// or an error); it must be one of them, never success or a panic.
		c := s.exec(t, context.Background(), contract.ExecRequest{Argv: []string{"/hookrun-no-such-dir/no-such-binary", "arg"}})
		if c.err == nil && c.res.ExitCode != 127 && c.res.ExitCode != 126 {
			t.Errorf("exit code %d and no error, want 127 or an error", c.res.ExitCode)
		}
	})
}

func (s *suite) stdoutStderrApart(t *testing.T) {
	c := s.exec(t, context.Background(), contract.ExecRequest{
		Argv: sh("echo out-1; echo err-1 >&2; echo out-2; printf 'err-2' >&2"),
	})
	if c.err != nil || c.res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v", c.res.ExitCode, c.err)
	}
	if got, want := c.stdout.String(), "out-1\nout-2\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := c.stderr.String(), "err-1\nerr-2"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

func (s *suite) env(t *testing.T) {
	const leaked = "HOOKRUN_CONTRACTTEST_LEAK"
	t.Setenv(leaked, "from-the-test-process")
	vars := []workflows.EnvVar{
		{Name: "HOOKRUN_CT_PLAIN", Value: "plain"},
		{Name: "HOOKRUN_CT_SPACES", Value: "a b  c"},
		{Name: "HOOKRUN_CT_SHELL", Value: "$(touch pwned) `touch pwned` $HOME ;|&"},
		{Name: "HOOKRUN_CT_EMPTY", Value: ""},
		{Name: "HOOKRUN_CT_LATER", Value: "first"},
		{Name: "HOOKRUN_CT_LATER", Value: "second"}, // the later entry wins
	}
	script := `for n in HOOKRUN_CT_PLAIN HOOKRUN_CT_SPACES HOOKRUN_CT_SHELL HOOKRUN_CT_EMPTY HOOKRUN_CT_LATER; do
  eval "v=\${$n-UNSET}"; printf '%s=[%s]\n' "$n" "$v"; done
env`
	host, inside := s.opts.Workspace(t)
	c := s.exec(t, context.Background(), contract.ExecRequest{Argv: sh(script), Env: vars, Dir: inside, Workspace: inside})
	if c.err != nil || c.res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, stderr %q", c.res.ExitCode, c.err, c.stderr.String())
	}
	out := c.stdout.String()
	for _, want := range []string{
		"HOOKRUN_CT_PLAIN=[plain]\n",
		"HOOKRUN_CT_SPACES=[a b  c]\n",
		"HOOKRUN_CT_SHELL=[$(touch pwned) `touch pwned` $HOME ;|&]\n",
		"HOOKRUN_CT_EMPTY=[]\n",
		"HOOKRUN_CT_LATER=[second]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, leaked) {
		t.Errorf("%s of the test process leaked into the command's environment:\n%s", leaked, out)
	}
	if _, err := os.Stat(filepath.Join(host, "pwned")); err == nil {
		t.Errorf("an environment value was executed as shell source")
	}
}

func (s *suite) workingDir(t *testing.T) {
	host, inside := s.opts.Workspace(t)
	if err := os.WriteFile(filepath.Join(host, "marker.txt"), []byte("marker-content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := s.exec(t, context.Background(), contract.ExecRequest{
		Argv: sh("pwd; cat marker.txt; echo made-by-step > written.txt"),
		Dir:  inside, Workspace: inside,
	})
	if c.err != nil || c.res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, stderr %q", c.res.ExitCode, c.err, c.stderr.String())
	}
	if got, want := c.stdout.String(), inside+"\nmarker-content\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	b, err := os.ReadFile(filepath.Join(host, "written.txt"))
	if err != nil || string(b) != "made-by-step\n" {
		t.Errorf("file written by the step: %q, %v; want %q", b, err, "made-by-step\n")
	}
}

func (s *suite) stdin(t *testing.T) {
	in := "line one\nline two with $(no expansion)\n" + strings.Repeat("x", 100_000) + "\nlast"
	c := s.exec(t, context.Background(), contract.ExecRequest{Argv: sh("cat"), Stdin: strings.NewReader(in)})
	if c.err != nil || c.res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, stderr %q", c.res.ExitCode, c.err, c.stderr.String())
	}
	if got := c.stdout.String(); got != in {
		t.Errorf("stdout (%d bytes) differs from stdin (%d bytes)", len(got), len(in))
	}
}

func (s *suite) noStdin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := s.exec(t, ctx, contract.ExecRequest{Argv: sh("cat; echo done")})
	if c.err != nil || c.res.ExitCode != 0 {
		t.Fatalf("with nil Stdin, `cat` must see EOF at once: exit %d, err %v after %s", c.res.ExitCode, c.err, c.elapsed)
	}
	if got := c.stdout.String(); got != "done\n" {
		t.Errorf("stdout %q, want %q", got, "done\n")
	}
}

// stopped checks the result of a command stopped by its context.
func (s *suite) stopped(t *testing.T, c *call, want error, within time.Duration) {
	t.Helper()
	if !errors.Is(c.err, want) {
		t.Errorf("error %v, want one wrapping %v", c.err, want)
	}
	if c.res.ExitCode != -1 {
		t.Errorf("exit code %d, want -1", c.res.ExitCode)
	}
	if c.elapsed > within {
		t.Errorf("Exec returned after %s, want within %s", c.elapsed, within)
	}
	if !strings.Contains(c.stdout.String(), "started") {
		t.Errorf("output written before the stop is lost: stdout %q", c.stdout.String())
	}
}

func (s *suite) timeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond+s.opts.Startup)
	defer cancel()
	c := s.exec(t, ctx, contract.ExecRequest{Argv: sh("echo started; sleep 30"), Grace: time.Second})
	s.stopped(t, c, context.DeadlineExceeded, 500*time.Millisecond+s.opts.Startup+s.opts.StopWithin)
	if c.elapsed < 450*time.Millisecond {
		t.Errorf("Exec returned after %s, before the deadline", c.elapsed)
	}
}

func (s *suite) timeoutIgnoringTerm(t *testing.T) {
	// SIGTERM is ignored by the shell and inherited by sleep: only the
	// SIGKILL after Grace stops it.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond+s.opts.Startup)
	defer cancel()
	grace := time.Second
	c := s.exec(t, ctx, contract.ExecRequest{Argv: sh("trap '' TERM; echo started; sleep 30; echo survived"), Grace: grace})
	s.stopped(t, c, context.DeadlineExceeded, 500*time.Millisecond+s.opts.Startup+grace+s.opts.StopWithin)
	if strings.Contains(c.stdout.String(), "survived") {
		t.Errorf("the command ran on after being stopped: %q", c.stdout.String())
	}
}

func (s *suite) cancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(500*time.Millisecond+s.opts.Startup, cancel)
	c := s.exec(t, ctx, contract.ExecRequest{Argv: sh("echo started; sleep 30"), Grace: time.Second})
	s.stopped(t, c, context.Canceled, 500*time.Millisecond+s.opts.Startup+s.opts.StopWithin)
}

// stoppedDoesNotRunOn: once Exec has returned for a stopped command,
// nothing of it runs on, wherever it ran (an agent inside an sbx sandbox
// outlives its `sbx exec` unless the executor stops it), so that a retry, a
// fallback or the next step never runs beside it.
func (s *suite) stoppedDoesNotRunOn(t *testing.T) {
	host, inside := s.opts.Workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond+s.opts.Startup)
	defer cancel()
	c := s.exec(t, ctx, contract.ExecRequest{Argv: sh("echo started; while :; do echo t >> ticks; sleep 0.02; done"),
		Dir: inside, Workspace: inside, Grace: 200 * time.Millisecond})
	s.stopped(t, c, context.DeadlineExceeded, 500*time.Millisecond+s.opts.Startup+s.opts.StopWithin)
	ticks := filepath.Join(host, "ticks")
	size := func() int64 {
		st, err := os.Stat(ticks)
		if err != nil {
			return -1
		}
		return st.Size()
	}
	before := size()
	if before <= 0 {
		t.Fatalf("the command never ran (%s: %d bytes)", ticks, before)
	}
	time.Sleep(300 * time.Millisecond)
	if after := size(); after != before {
		t.Errorf("the command runs on after Exec returned: %s grew from %d to %d bytes", ticks, before, after)
	}
}

func (s *suite) alreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	host, inside := s.opts.Workspace(t)
	c := s.exec(t, ctx, contract.ExecRequest{Argv: sh("echo ran > ran.txt; sleep 30"), Dir: inside, Workspace: inside})
	if !errors.Is(c.err, context.Canceled) || c.res.ExitCode != -1 {
		t.Errorf("got exit %d, err %v; want -1 and an error wrapping context.Canceled", c.res.ExitCode, c.err)
	}
	if c.elapsed > s.opts.StopWithin {
		t.Errorf("Exec returned after %s, want within %s", c.elapsed, s.opts.StopWithin)
	}
	if _, err := os.Stat(filepath.Join(host, "ran.txt")); err == nil {
		t.Errorf("the command ran although its context was already cancelled")
	}
}

// lineWidth is the length of one numbered line of largeOutput, newline
// included: "%08d " plus 54 letters.
const lineWidth = 64

func (s *suite) largeOutput(t *testing.T) {
	const lines = 2 << 20 / lineWidth // 2 MiB
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do printf '%%08d abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01\n' $i; i=$((i+1)); done; echo stderr-end >&2`, lines)
	c := s.exec(t, context.Background(), contract.ExecRequest{Argv: sh(script)})
	if c.err != nil || c.res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, stderr %q", c.res.ExitCode, c.err, c.stderr.String())
	}
	if got, want := c.stdout.Len(), lines*lineWidth; got != want {
		t.Errorf("stdout has %d bytes, want %d", got, want)
	}
	checkNumbered(t, c.stdout.Bytes(), lines, func(i int) string {
		return fmt.Sprintf("%08d abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01", i)
	})
	if got := c.stderr.String(); got != "stderr-end\n" {
		t.Errorf("stderr %q, want %q", got, "stderr-end\n")
	}
}

func (s *suite) manyLines(t *testing.T) {
	const lines = 20000
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo $i; echo e$i >&2; i=$((i+1)); done`, lines)
	c := s.exec(t, context.Background(), contract.ExecRequest{Argv: sh(script)})
	if c.err != nil || c.res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v", c.res.ExitCode, c.err)
	}
	checkNumbered(t, c.stdout.Bytes(), lines, func(i int) string { return fmt.Sprint(i) })
	checkNumbered(t, c.stderr.Bytes(), lines, func(i int) string { return fmt.Sprintf("e%d", i) })
}

// checkNumbered checks that out is exactly the lines want(0..n-1), in order.
func checkNumbered(t *testing.T, out []byte, n int, want func(int) string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	i := 0
	for sc.Scan() {
		if i >= n {
			t.Errorf("extra line %d: %q", i, sc.Text())
			return
		}
		if w := want(i); sc.Text() != w {
			t.Errorf("line %d is %q, want %q (lost, reordered or mixed output)", i, sc.Text(), w)
			return
		}
		i++
	}
	if i != n {
		t.Errorf("got %d lines, want %d", i, n)
	}
}
