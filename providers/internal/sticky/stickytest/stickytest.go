// Package stickytest helps test the forge reporters that write runs'
// comments with package sticky: Run drives a contract.Reporter through the
// reports of one run the way the engine does, feeding each returned
// ReportRef back into the next report; Golden compares with files in
// testdata/.
package stickytest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// T0 is when the steps of every Run start (step i at T0 + i×10s).
var T0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// Run is one run being reported: start, progress per step change, final.
type Run struct {
	// R is the next report; R.Ref holds what the last one returned.
	R contract.RunReport

	t        *testing.T
	rep      contract.Reporter
	stepTime time.Duration
}

// NewRun returns run id of wf for ev, attempt 1, running, with two pending
// steps "lint" and "review"; each step it finishes takes stepTime.
func NewRun(t *testing.T, rep contract.Reporter, id string, wf *workflows.Workflow, ev *workflows.Event, stepTime time.Duration) *Run {
	return &Run{t: t, rep: rep, stepTime: stepTime, R: contract.RunReport{RunID: id, Attempt: 1, Workflow: wf, Event: ev, HeadSHA: ev.HeadSHA(),
		Status: workflows.StatusRunning, Steps: []workflows.StepState{{ID: "lint", Status: workflows.StatusPending}, {ID: "review", Status: workflows.StatusPending}}}}
}

// Report sends the report of phase and keeps the returned ReportRef for the
// next one, as the engine keeps it in the run record.
func (x *Run) Report(phase contract.Phase) (contract.ReportRef, error) {
	x.t.Helper()
	x.R.Phase = phase
	ref, err := x.rep.Report(context.Background(), &x.R)
	x.R.Ref = ref
	return ref, err
}

// Must is Report that fails the test on an error.
func (x *Run) Must(phase contract.Phase) contract.ReportRef {
	x.t.Helper()
	ref, err := x.Report(phase)
	if err != nil {
		x.t.Fatalf("%s report: %v", phase, err)
	}
	return ref
}

// Step moves step i to st: running gives it a start time, a terminal state
// a finish time and exit code 0.
func (x *Run) Step(i int, st workflows.Status) {
	s := &x.R.Steps[i]
	s.Status = st
	if st == workflows.StatusRunning {
		s.StartedAt = at(time.Duration(i) * 10 * time.Second)
	}
	if st.Terminal() {
		s.FinishedAt = at(time.Duration(i)*10*time.Second + x.stepTime)
		code := 0
		s.ExitCode = &code
	}
}

// Finish sets the run's final status and body.
func (x *Run) Finish(st workflows.Status, body string) {
	x.R.Status = st
	x.R.Body = body
}

func at(d time.Duration) *time.Time { t := T0.Add(d); return &t }

// Golden compares got with testdata/name, rewriting the file first when
// update is set (the test package's -update flag).
func Golden(t *testing.T, name, got string, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// FailRedacted reports the run through start, a failed first step,
// progress and a failed final report whose step error, body (heading +
// output) and run error the engine redacted from output holding secret:
// every occurrence is "***" by the time it reaches the reporter.
func (x *Run) FailRedacted(secret, output, heading string) {
	x.t.Helper()
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "***") } // as the engine does
	x.Must(contract.PhaseStart)
	x.Step(0, workflows.StatusFailed)
	x.R.Steps[0].Error = redact("exit status 1: " + output)
	x.Must(contract.PhaseProgress)
	x.Finish(workflows.StatusFailed, redact(heading+output))
	x.R.Error = redact("step lint failed: " + output)
	x.Must(contract.PhaseFinal)
}

// NoSecret fails t unless reqs (at least five) carry secret nowhere (path,
// body, credential header) and token in no body; forge names the fake in
// the messages.
func NoSecret(t *testing.T, forge string, reqs []Request, secret, token string) {
	t.Helper()
	if len(reqs) < 5 {
		t.Fatalf("only %d requests", len(reqs))
	}
	for _, r := range reqs {
		if strings.Contains(r.Body, secret) || strings.Contains(r.Path, secret) || strings.Contains(r.Auth, secret) {
			t.Errorf("secret reached %s in %s %s", forge, r.Method, r.Path)
		}
		if strings.Contains(r.Body, token) {
			t.Errorf("token in the body of %s %s", r.Method, r.Path)
		}
	}
}
