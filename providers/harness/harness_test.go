package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/harness"
	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

var update = flag.Bool("update", false, "rewrite testdata/argv.golden")

// hostile is what an attacker controls: a PR title.
const hostile = "$(touch /tmp/pwned) `touch /tmp/pwned` ; rm -rf / #"

var vars = map[string]string{
	"HOOKRUN_PR_NUMBER": "7",
	"HOOKRUN_PR_TITLE":  hostile,
	"SANDBOX":           "hookrun-run1",
	"MODEL":             "opus",
	"DASHED":            "--dangerously-skip-permissions",
}

func lookup(name string) (string, bool) {
	v, ok := vars[name]
	return v, ok
}

// customs are `harnesses:` entries covering every prompt mode.
var customs = map[string]workflows.Harness{
	"arg_agent":    {Binary: "arg-agent", PrefixArgs: []string{"--json"}, PromptMode: workflows.PromptArg},
	"flag_agent":   {Binary: "flag-agent", PrefixArgs: []string{"chat"}, PromptMode: workflows.PromptFlag, PromptFlag: "--message"},
	"stdin_agent":  {Binary: "stdin-agent", PrefixArgs: []string{"--json"}, PromptMode: workflows.PromptStdin},
	"default_mode": {Binary: "plain-agent"},
	"sbx_claude": {Binary: "sbx", PromptMode: workflows.PromptArg,
		PrefixArgs: []string{"exec", "${SANDBOX}", "claude", "--dangerously-skip-permissions", "-p"}},
	"shell":          {Binary: "shell-agent", PrefixArgs: []string{"--run"}}, // overrides the built-in: an agent CLI, so its prompt is expanded
	"no_flag":        {Binary: "x", PromptMode: workflows.PromptFlag},
	"bad_mode":       {Binary: "x", PromptMode: "telepathy"},
	"unknown_in_arg": {Binary: "y", PrefixArgs: []string{"${NOT_SET}", "$HOOKRUN_PR_TITLE"}},
	// shells reading their script from hookrun (workflows.Harness.ShellScript)
	"seed_shell":    {Binary: "sh", PrefixArgs: []string{"-c"}, PromptMode: workflows.PromptArg},
	"bash_ec":       {Binary: "/bin/bash", PrefixArgs: []string{"-ec"}},
	"busybox_sh":    {Binary: "busybox", PrefixArgs: []string{"sh", "-c"}},
	"script_prefix": {Binary: "sh", PrefixArgs: []string{"-c", `echo "${HOOKRUN_PR_TITLE}: $1"`, "sh"}},
	"bash_stdin":    {Binary: "bash", PromptMode: workflows.PromptStdin},
	// not shells reading a script: their prompt is data
	"sh_file":  {Binary: "sh", PrefixArgs: []string{"./review.sh", "${HOOKRUN_PR_NUMBER}"}},
	"python_c": {Binary: "python3", PrefixArgs: []string{"-c", "import sys; print(sys.argv[1])"}},
}

const prompt = "Review PR #${HOOKRUN_PR_NUMBER}: ${HOOKRUN_PR_TITLE}"

func TestArgvGolden(t *testing.T) {
	builtin := &workflows.Workflow{Name: "golden"}
	custom := &workflows.Workflow{Name: "golden", Harnesses: customs}
	flags := []workflows.Flag{{Name: "max-turns", Value: "3"}, {Name: "allowed-tools", Value: "Read,${MODEL}"}, {Name: "verbose", Value: "true"}, {Name: "quiet", Value: "false"}}

	type tc struct {
		name string
		w    *workflows.Workflow
		run  workflows.HarnessRun
	}
	var cases []tc
	names := make([]string, 0, len(workflows.BuiltinHarnesses))
	for n := range workflows.BuiltinHarnesses {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cases = append(cases, tc{"builtin " + n, builtin, workflows.HarnessRun{Provider: n, Prompt: prompt}})
		if n != "shell" {
			cases = append(cases, tc{"builtin " + n + " with model and flags", builtin,
				workflows.HarnessRun{Provider: n, Prompt: prompt, Model: "${MODEL}", Flags: flags}})
		}
	}
	cases = append(cases,
		tc{"builtin shell prompt is not expanded by hookrun", builtin, workflows.HarnessRun{Provider: "shell", Prompt: `echo "${HOOKRUN_PR_TITLE}" $HOME`}},
		tc{"builtin shell rejects model", builtin, workflows.HarnessRun{Provider: "shell", Prompt: "true", Model: "x"}},
		tc{"custom arg mode", custom, workflows.HarnessRun{Provider: "arg_agent", Prompt: prompt, Model: "m1"}},
		tc{"custom flag mode", custom, workflows.HarnessRun{Provider: "flag_agent", Prompt: prompt, Flags: flags[:1]}},
		tc{"custom stdin mode", custom, workflows.HarnessRun{Provider: "stdin_agent", Prompt: prompt, Model: "m2"}},
		tc{"custom default mode is arg", custom, workflows.HarnessRun{Provider: "default_mode", Prompt: "hello"}},
		tc{"custom sbx binary runs as written, prefix args expanded", custom, workflows.HarnessRun{Provider: "sbx_claude", Prompt: prompt}},
		tc{"custom harness named shell overrides the built-in", custom, workflows.HarnessRun{Provider: "shell", Prompt: prompt}},
		tc{"positional prompt starting with a dash", custom, workflows.HarnessRun{Provider: "arg_agent", Prompt: "${DASHED}"}},
		tc{"unknown variables and bare $NAME stay as written", custom, workflows.HarnessRun{Provider: "unknown_in_arg", Prompt: "${NOT_SET} $HOOKRUN_PR_TITLE"}},
		tc{"empty prompt", builtin, workflows.HarnessRun{Provider: "claude"}},
		tc{"flag with a leading dash kept", builtin, workflows.HarnessRun{Provider: "codex", Prompt: "p", Flags: []workflows.Flag{{Name: "-s", Value: "read-only"}}}},
		tc{"custom sh -c harness: nothing substituted, the shell reads the environment", custom, workflows.HarnessRun{Provider: "seed_shell", Prompt: `echo "title: ${HOOKRUN_PR_TITLE}"`}},
		tc{"custom bash -ec harness", custom, workflows.HarnessRun{Provider: "bash_ec", Prompt: prompt}},
		tc{"custom busybox sh -c harness", custom, workflows.HarnessRun{Provider: "busybox_sh", Prompt: prompt}},
		tc{"custom sh -c with the script in prefix_args: prefix_args not substituted either", custom, workflows.HarnessRun{Provider: "script_prefix", Prompt: prompt}},
		tc{"custom bash reading its script from stdin", custom, workflows.HarnessRun{Provider: "bash_stdin", Prompt: prompt}},
		tc{"custom sh running a script file: prompt and prefix_args are data, substituted", custom, workflows.HarnessRun{Provider: "sh_file", Prompt: prompt}},
		tc{"custom python -c: not a shell, substituted", custom, workflows.HarnessRun{Provider: "python_c", Prompt: prompt}},
		tc{"error: custom sh -c harness rejects model", custom, workflows.HarnessRun{Provider: "seed_shell", Prompt: "true", Model: "x"}},
		tc{"error: custom sh -c harness rejects flags", custom, workflows.HarnessRun{Provider: "bash_ec", Prompt: "true", Flags: flags[:1]}},
		tc{"error: unknown provider", builtin, workflows.HarnessRun{Provider: "nope", Prompt: "p"}},
		tc{"error: prompt_mode flag without prompt_flag", custom, workflows.HarnessRun{Provider: "no_flag", Prompt: "p"}},
		tc{"error: unknown prompt_mode", custom, workflows.HarnessRun{Provider: "bad_mode", Prompt: "p"}},
	)

	var b strings.Builder
	for _, c := range cases {
		argv, stdin, err := harness.Argv(c.w, &c.run, lookup)
		fmt.Fprintf(&b, "## %s\n", c.name)
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n\n", err)
			continue
		}
		j, _ := json.Marshal(argv)
		fmt.Fprintf(&b, "argv: %s\n", j)
		if stdin != "" {
			j, _ := json.Marshal(stdin)
			fmt.Fprintf(&b, "stdin: %s\n", j)
		}
		b.WriteString("\n")
	}
	got := b.String()
	golden := filepath.Join("testdata", "argv.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("argv differs from %s (run `go test ./providers/harness -run TestArgvGolden -update` after checking):\n%s", golden, diff(string(want), got))
	}
}

// TestArgvHostileTitle checks the invariant behind the golden file: the
// hostile title is one argv element's substring, byte for byte, and nothing
// ran it.
func TestArgvHostileTitle(t *testing.T) {
	w := &workflows.Workflow{Name: "t"}
	for provider := range workflows.BuiltinHarnesses {
		if provider == "shell" {
			continue
		}
		argv, _, err := harness.Argv(w, &workflows.HarnessRun{Provider: provider, Prompt: prompt}, lookup)
		if err != nil {
			t.Fatalf("%s: %v", provider, err)
		}
		want := "Review PR #7: " + hostile
		if last := argv[len(argv)-1]; last != want {
			t.Errorf("%s: last argv element %q, want %q", provider, last, want)
		}
	}
}

// shellSeed is a custom harness written exactly as Dagu's docs write
// `shell`, with a prompt that reads the PR title.
const shellSeed = `
harnesses:
  shell:
    binary: sh
    prefix_args:
      - -c
    prompt_mode: arg
steps:
  - id: read_file
    action: harness.run
    with:
      provider: shell
      prompt: |
        echo "title: ${HOOKRUN_PR_TITLE}"
`

// TestShellHarnessHostileTitleOnHost runs the Dagu-style shell harness on
// the real host executor with hostile titles: the shell reads the title from
// the environment, so it prints literally and nothing in it runs.
func TestShellHarnessHostileTitleOnHost(t *testing.T) {
	dir := t.TempDir()
	pwned := filepath.Join(dir, "pwned")
	variants := []struct {
		name string
		seed string
	}{
		{"custom harness named shell", shellSeed},
		{"custom sh harness under another name", strings.ReplaceAll(shellSeed, "shell", "my_sh")},
		{"bash -ec", strings.Replace(strings.Replace(shellSeed, "binary: sh", "binary: /bin/bash", 1), "- -c", "- -ec", 1)},
	}
	titles := []struct{ name, title string }{
		{"command substitution", "$(echo PWNED)"},
		{"backquotes", "`id`"},
		{"touch", "$(touch " + pwned + ")"},
		{"backquoted touch and a list", "`touch " + pwned + "`; touch " + pwned},
		{"closing the quotes", `"; touch ` + pwned + `; echo "`},
		{"a variable reference", "${HOME} $(touch " + pwned + ")"},
	}
	for _, v := range variants {
		if strings.Contains(v.seed, "/bin/bash") {
			if _, err := os.Stat("/bin/bash"); err != nil {
				t.Logf("%s: /bin/bash not installed; the predicate's table test covers it", v.name)
				continue
			}
		}
		w, err := workflows.Parse("seed.yaml", []byte(v.seed))
		if err != nil {
			t.Fatalf("%s: parsing: %v", v.name, err)
		}
		run := w.Steps[0].Harness
		for _, tt := range titles {
			title := tt.title
			t.Run(v.name+"/"+tt.name, func(t *testing.T) {
				vars := map[string]string{"HOOKRUN_PR_TITLE": title}
				lookup := func(n string) (string, bool) { s, ok := vars[n]; return s, ok }
				var stdout, stderr bytes.Buffer
				base := contract.ExecRequest{
					RunID: "r1", StepID: "read_file", Dir: dir,
					Env: []workflows.EnvVar{
						{Name: "PATH", Value: "/usr/bin:/bin"},
						{Name: "HOME", Value: "/nonexistent"},
						{Name: "HOOKRUN_PR_TITLE", Value: title},
					},
					Stdout: &stdout, Stderr: &stderr, Grace: 500 * time.Millisecond,
				}
				res, err := harness.Run(context.Background(), everywhere(host.New(host.Config{}), base, lookup), w, run)
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("exit %d, err %v\n%s", res.ExitCode, err, stderr.String())
				}
				if _, err := os.Stat(pwned); err == nil {
					os.Remove(pwned)
					t.Fatalf("the title ran: %s exists", pwned)
				}
				if want := "title: " + title + "\n"; stdout.String() != want {
					t.Errorf("stdout %q, want %q", stdout.String(), want)
				}
			})
		}
	}
}

// agents writes fake agent CLIs into dir: each appends its name and
// arguments to calls.log; "ok" prints its prompt, "fail" exits 3, "slow"
// sleeps.
func agents(t *testing.T) (dir string, w *workflows.Workflow) {
	t.Helper()
	dir = t.TempDir()
	scripts := map[string]string{
		"ok":    `echo "ok $*" >> "$CALLS"; echo "answer: $*"`,
		"fail":  `echo "fail $*" >> "$CALLS"; echo "partial"; echo "agent broke" >&2; exit 3`,
		"stdin": `echo "stdin $(cat)" >> "$CALLS"; echo done`,
		"slow":  `echo "slow $*" >> "$CALLS"; echo started; sleep 30`,
	}
	w = &workflows.Workflow{Name: "fb", Harnesses: map[string]workflows.Harness{}}
	for name, body := range scripts {
		p := filepath.Join(dir, name+"-agent")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := workflows.PromptArg
		if name == "stdin" {
			mode = workflows.PromptStdin
		}
		w.Harnesses[name] = workflows.Harness{Binary: p, PromptMode: mode}
	}
	w.Harnesses["missing"] = workflows.Harness{Binary: filepath.Join(dir, "no-such-agent")}
	return dir, w
}

// everywhere routes every attempt to exec with base.
func everywhere(exec contract.Executor, base contract.ExecRequest, lookup func(string) (string, bool)) contract.HarnessRoute {
	return func(workflows.Harness) (contract.Attempt, error) {
		return contract.Attempt{Exec: exec, Base: base, Lookup: lookup}, nil
	}
}

func TestRunFallback(t *testing.T) {
	tests := []struct {
		name       string
		run        workflows.HarnessRun
		timeout    time.Duration
		wantCalls  []string
		wantExit   int
		wantErr    error
		wantStdout string
		wantSystem []string // fallback lines on stderr
	}{
		{
			name:       "success: no fallback",
			run:        workflows.HarnessRun{Provider: "ok", Prompt: "p1", Fallback: []workflows.HarnessRun{{Provider: "fail"}}},
			wantCalls:  []string{"ok p1"},
			wantStdout: "answer: p1\n",
		},
		{
			name:       "failure: first fallback that succeeds ends it, with the inherited prompt",
			run:        workflows.HarnessRun{Provider: "fail", Prompt: "p2", Fallback: []workflows.HarnessRun{{Provider: "ok"}, {Provider: "fail"}}},
			wantCalls:  []string{"fail p2", "ok p2"},
			wantStdout: "partial\nanswer: p2\n",
			wantSystem: []string{"hookrun: harness fail failed with exit code 3; trying fallback ok (1 of 2)"},
		},
		{
			name: "fallback with its own prompt, stdin mode",
			run: workflows.HarnessRun{Provider: "fail", Prompt: "p3", Fallback: []workflows.HarnessRun{
				{Provider: "stdin", Prompt: "own ${HOOKRUN_PR_NUMBER}"}}},
			wantCalls:  []string{"fail p3", "stdin own 7"},
			wantStdout: "partial\ndone\n",
			wantSystem: []string{"trying fallback stdin (1 of 1)"},
		},
		{
			name:      "all fail: last result returned",
			run:       workflows.HarnessRun{Provider: "fail", Prompt: "p4", Fallback: []workflows.HarnessRun{{Provider: "missing"}, {Provider: "fail"}}},
			wantCalls: []string{"fail p4", "fail p4"},
			wantExit:  3,
			wantSystem: []string{
				"hookrun: harness fail failed with exit code 3; trying fallback missing (1 of 2)",
				"hookrun: harness missing failed with exit code 127; trying fallback fail (2 of 2)",
			},
			wantStdout: "partial\npartial\n",
		},
		{
			name:       "unknown provider is a failure too",
			run:        workflows.HarnessRun{Provider: "nope", Prompt: "p5", Fallback: []workflows.HarnessRun{{Provider: "ok"}}},
			wantCalls:  []string{"ok p5"},
			wantStdout: "answer: p5\n",
			wantSystem: []string{`hookrun: harness nope failed: running harness nope: unknown provider "nope"; trying fallback ok (1 of 1)`},
		},
		{
			name:       "timeout is not a failure: no fallback",
			run:        workflows.HarnessRun{Provider: "slow", Prompt: "p6", Fallback: []workflows.HarnessRun{{Provider: "ok"}}},
			timeout:    400 * time.Millisecond,
			wantCalls:  []string{"slow p6"},
			wantExit:   -1,
			wantErr:    context.DeadlineExceeded,
			wantStdout: "started\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, w := agents(t)
			calls := filepath.Join(dir, "calls.log")
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			var stdout, stderr bytes.Buffer
			base := contract.ExecRequest{
				RunID: "r1", StepID: "review", Dir: dir,
				Env:    []workflows.EnvVar{{Name: "PATH", Value: "/usr/bin:/bin"}, {Name: "CALLS", Value: calls}},
				Stdout: &stdout, Stderr: &stderr, Grace: 500 * time.Millisecond,
			}
			res, err := harness.Run(ctx, everywhere(host.New(host.Config{}), base, lookup), w, &tt.run)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Run: unexpected error %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Run: error %v, want %v", err, tt.wantErr)
			}
			if res.ExitCode != tt.wantExit {
				t.Errorf("exit code %d, want %d", res.ExitCode, tt.wantExit)
			}
			b, _ := os.ReadFile(calls)
			got := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(b) == 0 {
				got = nil
			}
			if strings.Join(got, "|") != strings.Join(tt.wantCalls, "|") {
				t.Errorf("agents called %q, want %q", got, tt.wantCalls)
			}
			if stdout.String() != tt.wantStdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantStdout)
			}
			sys := 0
			for _, line := range strings.Split(stderr.String(), "\n") {
				if strings.HasPrefix(line, "hookrun: harness ") {
					sys++
				}
			}
			if sys != len(tt.wantSystem) {
				t.Errorf("%d fallback lines on stderr, want %d:\n%s", sys, len(tt.wantSystem), stderr.String())
			}
			for _, want := range tt.wantSystem {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

func TestAttempts(t *testing.T) {
	run := &workflows.HarnessRun{Provider: "claude", Prompt: "p", Model: "m", Fallback: []workflows.HarnessRun{
		{Provider: "codex"}, {Provider: "gemini", Prompt: "own"}}}
	got := harness.Attempts(run)
	want := []string{"claude:p:m", "codex:p:", "gemini:own:"}
	if len(got) != len(want) {
		t.Fatalf("got %d attempts, want %d", len(got), len(want))
	}
	for i, a := range got {
		if s := a.Provider + ":" + a.Prompt + ":" + a.Model; s != want[i] || a.Fallback != nil {
			t.Errorf("attempt %d = %s (fallback %v), want %s", i, s, a.Fallback, want[i])
		}
	}
	if run.Fallback[0].Prompt != "" {
		t.Errorf("Attempts modified its argument")
	}
}

// diff shows the first differing lines of two texts.
func diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := 0
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, w, g)
			if n++; n == 10 {
				break
			}
		}
	}
	return b.String()
}
