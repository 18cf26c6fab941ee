package forgetest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Patch is main.go's patch in the pull request the Review case reviews,
// as GitHub's files API and GitLab's diffs API give it: lines 10-12
// context, 13-14 added, 15 context; a second hunk adding line 40.
const Patch = "@@ -10,6 +10,7 @@ func main() {\n" +
	" \tctx := context.Background()\n" +
	" \tcfg := load()\n" +
	" \tif cfg == nil {\n" +
	"-\t\tpanic(\"no config\")\n" +
	"+\t\tlog.Fatal(\"no config\")\n" +
	"+\t\treturn\n" +
	" \t}\n" +
	"@@ -37,2 +39,3 @@ func run() {\n" +
	" \tx := 1\n" +
	"+\ty := x\n" +
	" }\n"

// PatchPath is the file Patch changes.
const PatchPath = "main.go"

// UnifiedDiff is the pull request's whole diff, as `git diff` (Gitea's
// pulls/{n}.diff) writes it.
func UnifiedDiff() string {
	return "diff --git a/main.go b/main.go\nindex 83db48f..bf269f4 100644\n--- a/main.go\n+++ b/main.go\n" + Patch
}

// ReviewFake is the suite's view of a fake forge's review API.
type ReviewFake interface {
	// Inline are the bot's inline comments on the pull request, by
	// "path:line" (the new line they are on).
	Inline() map[string]string
	// Marked are the bodies of the comments marked gone ("Fixed in"
	// edited on GitHub, the discussion resolved on GitLab).
	Marked() []string
	// ReviewRequests is how many requests created reviews or discussions.
	ReviewRequests() int
}

// hostile is a finding's message as a pull request's code could make a
// tool write it: HTML, a mention, GitLab quick actions, a link and a
// tracking pixel.
const hostile = "log.Fatal <exits> @acme/sec\n/approve\n  /merge\n[click me](https://evil.example/x) ![](https://evil.example/pixel.png)"

// reEscapeless is a '[' or ']' not escaped with a backslash.
var reEscapeless = regexp.MustCompile(`(^|[^\\])[\[\]]`)

// shownAsText checks a comment body with the message hostile shows it as
// text: no HTML, no mention, no line a GitLab quick action (none starts
// with '/' after blanks), no link or image (each '[' and ']' escaped).
func shownAsText(body string) error {
	for _, bad := range []string{"<exits>", "@acme"} {
		if strings.Contains(body, bad) {
			return fmt.Errorf("it holds %q", bad)
		}
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "/") {
			return fmt.Errorf("line %q starts with /", l)
		}
	}
	if m := reEscapeless.FindString(body); m != "" {
		return fmt.Errorf("%q: a link or an image", m)
	}
	for _, want := range []string{`\[click me\]\(https://evil.example/x\)`, `\!\[\]\(https://evil.example/pixel.png\)`, `\/approve`, `\/merge`} {
		if !strings.Contains(body, want) {
			return fmt.Errorf("it does not show %q", want)
		}
	}
	return nil
}

// reviewCase: one review per run on the lines the pull request changed
// (filter added), a suggestion in the forge's syntax, no repeat on a
// second run, gone findings marked (where the forge does), and no review
// at all without report.review.
func reviewCase(t *testing.T, h Harness) {
	if h.Review == nil {
		t.Logf("%s: no fake of the review API; Review is not covered here", h.Name)
		return
	}
	ctx := context.Background()
	f, fake := h.Review(t)
	ev := *h.Event
	wf := &workflows.Workflow{Name: "lint", Report: workflows.Report{Comment: workflows.CommentNone,
		Review: &workflows.ReviewOptions{Filter: workflows.ReviewFilterAdded, MaxComments: 30}}}
	added := contract.Finding{Path: PatchPath, StartLine: 13, Level: contract.LevelError, Rule: "fatal", Message: hostile,
		Suggestions: []contract.Suggestion{{StartLine: 13, Text: "\t\treturn errNoConfig"}}}
	onContext := contract.Finding{Path: PatchPath, StartLine: 11, Level: contract.LevelWarning, Rule: "ctx", Message: "unused"}
	later := contract.Finding{Path: PatchPath, StartLine: 40, Level: contract.LevelNote, Rule: "y", Message: "y is x"}
	status := workflows.StatusSucceeded
	run := func(id string, fs ...contract.Finding) *forge.ReviewSummary {
		t.Helper()
		rep := &contract.RunReport{Phase: contract.PhaseFinal, RunID: id, Attempt: 1, Workflow: wf, Event: &ev,
			HeadSHA: h.Head.SHA, Status: status, Results: &contract.Results{Findings: fs}}
		s, err := f.Review(ctx, rep)
		if err != nil || s == nil {
			t.Fatalf("review of run %s: %+v, %v", id, s, err)
		}
		return s
	}

	s := run("run1", added, onContext)
	in := fake.Inline()
	body, ok := in[PatchPath+":13"]
	if len(in) != 1 || !ok {
		t.Fatalf("inline comments after the first run %v, want one on main.go:13", in)
	}
	if !strings.HasPrefix(body, "<!-- hookrun:finding:") || !strings.Contains(body, h.Suggestion+"\t\treturn errNoConfig\n") {
		t.Errorf("comment body %q: want the marker first and the suggestion %q", body, h.Suggestion)
	}
	if err := shownAsText(body); err != nil {
		t.Errorf("comment body %q: %v", body, err)
	}
	if fake.ReviewRequests() != 1 {
		t.Errorf("%d review requests after the first run, want 1", fake.ReviewRequests())
	}
	if s.New != 1 || s.Posted != 1 || len(s.Dropped) != 1 || s.Dropped[0].Rule != "ctx" {
		t.Errorf("first summary %+v", s)
	}

	s = run("run2", added, onContext, later)
	if in := fake.Inline(); len(in) != 2 || in[PatchPath+":40"] == "" || in[PatchPath+":13"] != body {
		t.Errorf("inline comments after the second run %v, want main.go:13 once and main.go:40", in)
	}
	if s.New != 1 || s.Still != 1 || s.Gone != 0 {
		t.Errorf("second summary %+v, want 1 new, 1 still", s)
	}

	// A failed run's missing findings may be a crashed tool's: counted
	// gone, not marked.
	status = workflows.StatusFailed
	if s = run("run2-failed", later); s.Gone != 1 || len(fake.Marked()) != 0 {
		t.Errorf("failed run: summary %+v, marked %q; want 1 gone, none marked", s, fake.Marked())
	}
	status = workflows.StatusSucceeded

	n := fake.ReviewRequests()
	s = run("run3", later)
	if s.New != 0 || s.Still != 1 || s.Gone != 1 || fake.ReviewRequests() != n {
		t.Errorf("third summary %+v (review requests %d → %d), want 1 still, 1 gone, nothing posted", s, n, fake.ReviewRequests())
	}
	// Marked: the main.go:13 comment, resolved as it is or edited to say
	// it is fixed in the head.
	if marked := fake.Marked(); h.MarksGone && (len(marked) != 1 || marked[0] != body && marked[0] != body+review.Fixed(h.Head.SHA)) {
		t.Errorf("marked gone %q, want the main.go:13 comment %q (+ %q)", marked, body, review.Fixed(h.Head.SHA))
	}

	noReviewWithout(t, h, f, fake, added, later)
}

// noReviewWithout: a workflow without report.review posts nothing,
// whatever the steps left in $HOOKRUN_RESULTS (fs).
func noReviewWithout(t *testing.T, h Harness, f forge.Forge, fake ReviewFake, fs ...contract.Finding) {
	t.Helper()
	ctx := context.Background()
	ev := *h.Event
	plain := &workflows.Workflow{Name: "plain", Report: workflows.Report{Comment: workflows.CommentNone}}
	rep := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "run4", Attempt: 1, Workflow: plain, Event: &ev,
		HeadSHA: h.Head.SHA, Status: workflows.StatusSucceeded, Results: &contract.Results{Findings: fs}}
	n := fake.ReviewRequests()
	if s, err := f.Review(ctx, rep); s != nil || err != nil {
		t.Errorf("Review without report.review: %+v, %v", s, err)
	}
	if _, err := f.Report(ctx, rep); err != nil {
		t.Errorf("Report without report.review: %v", err)
	}
	if fake.ReviewRequests() != n {
		t.Error("a workflow without report.review posted a review")
	}
}

// twoWorkflowsCase: two workflows reviewing one pull request (a linter and
// an AI reviewer) each see only their own comments: neither skips a
// finding the other commented on, counts the other's comments as still
// present or gone, or marks them; a re-run of each still does not repeat
// itself, and marks its own gone finding.
func twoWorkflowsCase(t *testing.T, h Harness) {
	if h.Review == nil {
		t.Logf("%s: no fake of the review API; ReviewTwoWorkflows is not covered here", h.Name)
		return
	}
	ctx := context.Background()
	f, fake := h.Review(t)
	ev := *h.Event
	workflow := func(name string) *workflows.Workflow {
		return &workflows.Workflow{Name: name, Report: workflows.Report{Comment: workflows.CommentNone,
			Review: &workflows.ReviewOptions{Filter: workflows.ReviewFilterAdded, MaxComments: 30}}}
	}
	lint, ai := workflow("lint"), workflow("ai")
	both := contract.Finding{Path: PatchPath, StartLine: 13, Level: contract.LevelError, Rule: "fatal", Message: "log.Fatal exits"}
	aiOnly := contract.Finding{Path: PatchPath, StartLine: 40, Level: contract.LevelNote, Rule: "y", Message: "y is x"}
	type want struct{ posted, still, gone int }
	run := func(wf *workflows.Workflow, id string, w want, fs ...contract.Finding) {
		t.Helper()
		n := fake.ReviewRequests()
		rep := &contract.RunReport{Phase: contract.PhaseFinal, RunID: id, Attempt: 1, Workflow: wf, Event: &ev,
			HeadSHA: h.Head.SHA, Status: workflows.StatusSucceeded, Results: &contract.Results{Findings: fs}}
		s, err := f.Review(ctx, rep)
		if err != nil || s == nil {
			t.Fatalf("review of %s run %s: %+v, %v", wf.Name, id, s, err)
		}
		if s.Posted != w.posted || s.New != w.posted || s.Still != w.still || s.Gone != w.gone || (fake.ReviewRequests() > n) != (w.posted > 0) {
			t.Errorf("%s run %s: summary %+v, review requests %d → %d; want %d posted, %d still, %d gone",
				wf.Name, id, s, n, fake.ReviewRequests(), w.posted, w.still, w.gone)
		}
	}
	run(lint, "lint-1", want{posted: 1}, both)
	// ai finds what lint found, and more: both its own, lint's not gone.
	run(ai, "ai-1", want{posted: 2}, both, aiOnly)
	// lint again: its finding still there, ai's not its own.
	run(lint, "lint-2", want{still: 1}, both)
	if m := fake.Marked(); len(m) != 0 {
		t.Fatalf("marked gone %q: a workflow marked the other's comments", m)
	}
	// ai without aiOnly: its own comment on line 40 is marked, nothing
	// of lint's.
	aiComment := fake.Inline()[PatchPath+":40"]
	run(ai, "ai-2", want{still: 1, gone: 1}, both)
	if m := fake.Marked(); h.MarksGone && (len(m) != 1 || m[0] != aiComment && m[0] != aiComment+review.Fixed(h.Head.SHA) ||
		!strings.HasPrefix(review.KeyOf(m[0]), review.Scope("ai")+":")) {
		t.Errorf("marked gone %q, want ai's main.go:40 comment %q", m, aiComment)
	}
	run(lint, "lint-3", want{still: 1}, both)
}
