package render

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }
func code(c int) *int               { return &c }

func report(phase contract.Phase, status workflows.Status, steps ...workflows.StepState) *contract.RunReport {
	return &contract.RunReport{
		Phase:    phase,
		RunID:    "01JDQ4V6RZ3M8W1K9T2XGQY7PA",
		Attempt:  1,
		Workflow: &workflows.Workflow{Name: "pr-review"},
		Event:    &workflows.Event{Forge: workflows.Forge("github"), Repo: "octo/hello", PullRequest: &workflows.PullRequest{Number: 7}},
		HeadSHA:  "6dcb09b5b57875f334f61aebed695e2e4193db5e",
		Status:   status,
		Steps:    steps,
	}
}

func TestComment(t *testing.T) {
	now := func() time.Time { return t0.Add(75 * time.Second) }
	longBody := "### Review\n\n```go\n" + strings.Repeat("fmt.Println(\"line\")\n", 200) + "```\n"
	cases := []struct {
		name string
		r    *contract.RunReport
		o    Options
	}{
		{"start", report(contract.PhaseStart, workflows.StatusRunning,
			workflows.StepState{ID: "lint", Status: workflows.StatusPending},
			workflows.StepState{ID: "review", Status: workflows.StatusPending}), Options{}},
		{"progress", report(contract.PhaseProgress, workflows.StatusRunning,
			workflows.StepState{ID: "lint", Status: workflows.StatusSucceeded, StartedAt: at(0), FinishedAt: at(3200 * time.Millisecond), ExitCode: code(0)},
			workflows.StepState{ID: "review", Status: workflows.StatusRunning, StartedAt: at(4 * time.Second)}),
			Options{RunURL: "https://hookrun.example/runs/01JDQ4V6RZ3M8W1K9T2XGQY7PA"}},
		{"start-files-truncated", func() *contract.RunReport {
			r := report(contract.PhaseStart, workflows.StatusRunning, workflows.StepState{ID: "test", Status: workflows.StatusPending})
			r.Event.Files = &workflows.ChangedFiles{Truncated: true}
			return r
		}(), Options{}},
		{"start-files-unknown", func() *contract.RunReport {
			r := report(contract.PhaseStart, workflows.StatusRunning, workflows.StepState{ID: "test", Status: workflows.StatusPending})
			r.Event.Files = &workflows.ChangedFiles{Unknown: "the github API did not list them"}
			return r
		}(), Options{}},
		{"final-success", func() *contract.RunReport {
			r := report(contract.PhaseFinal, workflows.StatusSucceeded,
				workflows.StepState{ID: "lint", Status: workflows.StatusSucceeded, StartedAt: at(0), FinishedAt: at(3200 * time.Millisecond), ExitCode: code(0)},
				workflows.StepState{ID: "review", Status: workflows.StatusSucceeded, StartedAt: at(4 * time.Second), FinishedAt: at(2*time.Minute + 10*time.Second), ExitCode: code(0)})
			r.Body = "### Review\n\nLooks good to me.\n"
			r.Attempt = 2
			return r
		}(), Options{}},
		{"final-failed", func() *contract.RunReport {
			r := report(contract.PhaseFinal, workflows.StatusFailed,
				workflows.StepState{ID: "lint", Status: workflows.StatusFailed, StartedAt: at(0), FinishedAt: at(900 * time.Millisecond), ExitCode: code(2), Attempts: 3, Error: "exit status 2:\nmake: *** [lint] `Error` 2"},
				workflows.StepState{ID: "review", Status: workflows.StatusSkipped})
			r.Error = "step lint failed\n```\nnested fence\n```"
			return r
		}(), Options{}},
		{"final-partially-succeeded", func() *contract.RunReport {
			r := report(contract.PhaseFinal, workflows.StatusPartiallySucceeded,
				workflows.StepState{ID: "lint", Status: workflows.StatusFailed, StartedAt: at(0), FinishedAt: at(900 * time.Millisecond), ExitCode: code(1), Error: "exit status 1"},
				workflows.StepState{ID: "review", Status: workflows.StatusSucceeded, StartedAt: at(time.Second), FinishedAt: at(3 * time.Second), ExitCode: code(0)})
			r.Body = "### Review\n\nLint failed, review done.\n"
			return r
		}(), Options{}},
		{"final-skipped", func() *contract.RunReport {
			r := report(contract.PhaseFinal, workflows.StatusSkipped,
				workflows.StepState{ID: "review", Status: workflows.StatusSkipped})
			r.Error = `precondition not met: "${ENVIRONMENT}" is "staging", want "production"`
			return r
		}(), Options{}},
		{"final-actions", func() *contract.RunReport {
			r := report(contract.PhaseFinal, workflows.StatusSucceeded,
				workflows.StepState{ID: "triage", Status: workflows.StatusSucceeded, StartedAt: at(0), FinishedAt: at(2 * time.Second), ExitCode: code(0)})
			r.Acted = &contract.ActionsOutcome{
				Applied: []contract.ActionNote{{What: `add label "bug" to #7`}, {What: "comment on #7", Reason: "posted by an earlier attempt"}},
				Refused: []contract.ActionNote{{What: "add label \"`@all` **x**\" to #7", Reason: "label \"`@all` **x**\" is not in permissions.labels"},
					{What: "close #7 as duplicate", Reason: "permissions.state does not include close"}},
				Failed: []contract.ActionNote{{What: "assign alice to #7", Reason: "assigning o/r#7: 422 Validation Failed"}},
			}
			return r
		}(), Options{}},
		{"final-cancelled", report(contract.PhaseFinal, workflows.StatusCancelled,
			workflows.StepState{ID: "review", Status: workflows.StatusCancelled, StartedAt: at(0), FinishedAt: at(5 * time.Second)}), Options{}},
		{"delivery-pushed", delivered(workflows.Forge("github"), &workflows.Delivery{Outcome: workflows.DeliveryPushed,
			Branch: "hookrun/pr-review/7", Head: "0123456789abcdef0123456789abcdef01234567", Commits: 2,
			BranchURL:  "https://github.com/octo/hello/tree/hookrun/pr-review/7",
			CompareURL: "https://github.com/octo/hello/compare/6dcb09b5b57875f334f61aebed695e2e4193db5e...hookrun/pr-review/7"}), Options{}},
		{"delivery-draft", delivered(workflows.Forge("github"), &workflows.Delivery{Outcome: workflows.DeliveryPushed,
			Branch: "hookrun/pr-review/7", Commits: 1,
			BranchURL:   "https://github.com/octo/hello/tree/hookrun/pr-review/7",
			CompareURL:  "https://github.com/octo/hello/compare/6dcb09b5b57875f334f61aebed695e2e4193db5e...hookrun/pr-review/7",
			PullRequest: &workflows.ChangeRequest{Number: 8, URL: "https://github.com/octo/hello/pull/8"}}), Options{}},
		{"delivery-draft-gitlab", delivered(workflows.Forge("gitlab"), &workflows.Delivery{Outcome: workflows.DeliveryPushed,
			Branch: "hookrun/pr-review/7", Commits: 3,
			BranchURL:   "https://gitlab.com/octo/hello/-/tree/hookrun/pr-review/7",
			CompareURL:  "https://gitlab.com/octo/hello/-/compare/6dcb09b5b57875f334f61aebed695e2e4193db5e...hookrun/pr-review/7",
			PullRequest: &workflows.ChangeRequest{Number: 9, URL: "https://gitlab.com/octo/hello/-/merge_requests/9"}}),
			Options{Links: forge.Links{Request: "merge request", Mark: "!"}}},
		{"delivery-fork", delivered(workflows.Forge("github"), &workflows.Delivery{Outcome: workflows.DeliveryPushed,
			Branch: "hookrun/pr-review/7", Commits: 1, BranchURL: "https://github.com/octo/hello/tree/hookrun/pr-review/7",
			Note: "the pull request's head branch is in a fork, and a pull request of octo/hello cannot merge into a fork's branch: no draft pull request opened; the branch is in octo/hello"}), Options{}},
		{"delivery-none", delivered(workflows.Forge("github"), &workflows.Delivery{Outcome: workflows.DeliveryNoCommits}), Options{}},
		{"delivery-skipped", delivered(workflows.Forge("github"), &workflows.Delivery{Outcome: workflows.DeliverySkipped,
			Note: "the event has no pull or merge request (a push or an issue) to deliver the agent's commits to: nothing pushed"}), Options{}},
		{"delivery-failed", func() *contract.RunReport {
			r := delivered(workflows.Forge("github"), &workflows.Delivery{Outcome: workflows.DeliveryFailed,
				Note: "pushing branch hookrun/pr-review/7: running git push: exit status 128: remote: `denied`"})
			r.Status, r.Error = workflows.StatusFailed, "delivering the agent's commits: pushing branch hookrun/pr-review/7: running git push: exit status 128"
			return r
		}(), Options{}},
		{"final-findings", report(contract.PhaseFinal, workflows.StatusSucceeded,
			workflows.StepState{ID: "lint", Status: workflows.StatusSucceeded, StartedAt: at(0), FinishedAt: at(time.Second), ExitCode: code(0)}),
			Options{Review: func() *review.Summary {
				s := &review.Summary{Filter: "added", Findings: 25, Posted: 2, New: 2, Still: 1, Gone: 3,
					Kept: []contract.Finding{{Path: "main.go", StartLine: 90, Rule: "errcheck",
						Message: "over the limit\n/approve [x](https://evil.example/x) ![](https://evil.example/p.png) #1"}}}
				for i := range 22 {
					s.Dropped = append(s.Dropped, contract.Finding{Path: "pkg/x.go", StartLine: i + 1, Rule: "unused",
						Message: fmt.Sprintf("<b>%d</b> @acme/team\nsecond line", i)})
				}
				return s
			}()}},
		{"truncated", func() *contract.RunReport {
			r := report(contract.PhaseFinal, workflows.StatusSucceeded,
				workflows.StepState{ID: "review", Status: workflows.StatusSucceeded, StartedAt: at(0), FinishedAt: at(time.Second)})
			r.Body = longBody
			return r
		}(), Options{Limit: 1000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.Now == nil {
				tc.o.Now = now
			}
			got := Comment(tc.r, tc.o)
			limit := tc.o.Limit
			if limit == 0 {
				limit = DefaultLimit
			}
			if n := utf8.RuneCountInString(got); n > limit {
				t.Fatalf("comment has %d characters, limit %d", n, limit)
			}
			if !HasMarker(got, "pr-review") || !HasRunMarker(got, tc.r.RunID) {
				t.Fatalf("markers missing:\n%s", got)
			}
			golden(t, tc.name+".md", got)
		})
	}
}

// delivered is a final report of a sandboxed run whose commits d describes.
func delivered(forge workflows.Forge, d *workflows.Delivery) *contract.RunReport {
	r := report(contract.PhaseFinal, workflows.StatusSucceeded,
		workflows.StepState{ID: "fix", Status: workflows.StatusSucceeded, StartedAt: at(0), FinishedAt: at(42 * time.Second), ExitCode: code(0)})
	r.Event.Forge = forge
	r.Body = "Fixed the failing test."
	r.Delivery = d
	return r
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
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

// TestCommentTruncation checks, over many limits and body shapes, that the
// comment never exceeds the limit, keeps the marker, header and checklist,
// keeps the start of the body and says it was cut.
func TestCommentTruncation(t *testing.T) {
	bodies := map[string]string{
		"ascii":     strings.Repeat("a", 70000),
		"multibyte": strings.Repeat("ü✅", 40000),
		"lines":     strings.Repeat("some review text on a line\n", 3000),
		"fenced":    "```diff\n" + strings.Repeat("+ added line\n", 6000) + "```\n",
	}
	for name, body := range bodies {
		for _, limit := range []int{400, 1000, 4096, DefaultLimit} {
			r := report(contract.PhaseFinal, workflows.StatusSucceeded,
				workflows.StepState{ID: "lint", Status: workflows.StatusSucceeded},
				workflows.StepState{ID: "review", Status: workflows.StatusSucceeded})
			r.Body = body
			got := Comment(r, Options{Limit: limit})
			if n := utf8.RuneCountInString(got); n > limit {
				t.Errorf("%s/%d: %d characters", name, limit, n)
			}
			if !utf8.ValidString(got) {
				t.Errorf("%s/%d: invalid UTF-8", name, limit)
			}
			if !strings.HasPrefix(got, Marker("pr-review")+"\n") || !strings.Contains(got, "`review` succeeded") {
				t.Errorf("%s/%d: header or checklist lost", name, limit)
			}
			if !strings.Contains(got, "Truncated by hookrun") {
				t.Errorf("%s/%d: no truncation note", name, limit)
			}
			if !strings.Contains(got, body[:20]) {
				t.Errorf("%s/%d: start of the body lost", name, limit)
			}
			if name == "fenced" && openFence(got) != "" {
				t.Errorf("%s/%d: code block left open, the note would render as code", name, limit)
			}
		}
	}
	// Under the limit nothing is cut.
	r := report(contract.PhaseFinal, workflows.StatusSucceeded)
	r.Body = strings.Repeat("b", 1000)
	if got := Comment(r, Options{}); strings.Contains(got, "Truncated") || !strings.Contains(got, r.Body) {
		t.Errorf("short body was cut")
	}
	// The body is shown only in the final phase.
	r.Phase = contract.PhaseProgress
	if got := Comment(r, Options{}); strings.Contains(got, r.Body) {
		t.Errorf("body shown before the final phase")
	}
}

func TestHeadOverLimit(t *testing.T) {
	var steps []workflows.StepState
	for range 200 {
		steps = append(steps, workflows.StepState{ID: "step", Status: workflows.StatusFailed, Error: strings.Repeat("e", 300)})
	}
	got := Comment(report(contract.PhaseFinal, workflows.StatusFailed, steps...), Options{Limit: 2000})
	if n := utf8.RuneCountInString(got); n > 2000 || !strings.HasPrefix(got, Marker("pr-review")) || !strings.Contains(got, "Truncated by hookrun") {
		t.Errorf("head over the limit: %d characters, marker kept %v", n, strings.HasPrefix(got, Marker("pr-review")))
	}
}

func TestMarkers(t *testing.T) {
	cases := []struct {
		body string
		want bool
	}{
		{"<!-- hookrun:pr-review -->\nbody", true},
		{"<!-- hookrun:pr-review -->\r\nbody", true},
		{"<!-- hookrun:pr-review -->", true},
		{"<!-- hookrun:pr-review-2 -->\nbody", false},
		{"quoted:\n<!-- hookrun:pr-review -->\n", false},
		{"", false},
	}
	for _, tc := range cases {
		if got := HasMarker(tc.body, "pr-review"); got != tc.want {
			t.Errorf("HasMarker(%q) = %v", tc.body, got)
		}
	}
	if RunURL("", "x") != "" || RunURL("https://h/runs/{run}", "r1") != "https://h/runs/r1" {
		t.Errorf("RunURL")
	}
}

func TestDescription(t *testing.T) {
	cases := []struct {
		status workflows.Status
		err    string
		want   string
	}{
		{workflows.StatusRunning, "", "Running (run r1)"},
		{workflows.StatusSucceeded, "", "Succeeded (run r1)"},
		{workflows.StatusCancelled, "", "Cancelled (run r1)"},
		{workflows.StatusFailed, "step lint:\nexit 2", "Failed at step lint: step lint: exit 2 (run r1)"},
		{workflows.StatusPartiallySucceeded, "", "Partially succeeded: step lint failed, tolerated by continue_on (run r1)"},
		{workflows.StatusSkipped, "preconditions not met: want x", "Skipped: preconditions not met: want x (run r1)"},
	}
	for _, tc := range cases {
		r := &contract.RunReport{RunID: "r1", Status: tc.status, Error: tc.err,
			Steps: []workflows.StepState{{ID: "lint", Status: workflows.StatusFailed}}}
		if tc.status != workflows.StatusFailed && tc.status != workflows.StatusPartiallySucceeded {
			r.Steps = nil
		}
		if got := Description(r, 140); got != tc.want {
			t.Errorf("Description(%s) = %q, want %q", tc.status, got, tc.want)
		}
	}
	r := &contract.RunReport{RunID: "r1", Status: workflows.StatusFailed, Error: strings.Repeat("x", 500)}
	if n := utf8.RuneCountInString(Description(r, 140)); n != 140 {
		t.Errorf("long description has %d characters", n)
	}
}
