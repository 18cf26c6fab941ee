package gitlab

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// hostile is a step's output as a pull request's code can write it: lines
// GitLab runs as quick actions, one escaped already, and fenced code.
const hostile = "Looks fine.\n/approve\n  /merge\n/label ~bug\n\\/unassign @dave\n\n```sh\n/approve\n  /merge\n```\n"

// inertText is hostile as GitLab must get it: each '/' that starts a line
// escaped once, the fenced code as it was.
const inertText = "Looks fine.\n\\/approve\n  \\/merge\n\\/label ~bug\n\\/unassign @dave\n\n```sh\n/approve\n  /merge\n```\n"

// quickActions are the lines of a note GitLab would run: those starting with
// '/' and a letter, outside fenced code.
func quickActions(body string) []string {
	var out []string
	fence := ""
	for _, l := range strings.Split(body, "\n") {
		switch {
		case fence != "" && strings.TrimRight(l, " ") == fence:
			fence = ""
		case fence != "":
		case strings.HasPrefix(l, "```"), strings.HasPrefix(l, "~~~"):
			fence = l[:3]
		case regexp.MustCompile(`^/[A-Za-z]`).MatchString(l):
			out = append(out, l)
		}
	}
	return out
}

// TestNotesHaveNoQuickActions: the run's note with a report body, and the
// note of an actions.json comment, reach GitLab with no line it would run
// as a quick action, escaped once, their fenced code unchanged.
func TestNotesHaveNoQuickActions(t *testing.T) {
	f := newFakeGitLab(t)
	rep := newReporter(t, f, nil)
	wf := workflow("ai-review", "sticky", false)
	wf.Permissions = &workflows.Permissions{Comment: true}
	x := newRun(t, rep, "run-quick", wf, mrEvent(7))
	x.Must(contract.PhaseStart)
	x.Finish(workflows.StatusSucceeded, hostile)
	id := x.Must(contract.PhaseFinal).CommentID
	if nt := f.note(id); !strings.HasSuffix(nt.Body, "\n"+inertText) {
		t.Errorf("run note ends\n%q\nwant\n%q", nt.Body[max(0, len(nt.Body)-len(inertText)-1):], "\n"+inertText)
	}

	final := &contract.RunReport{Phase: contract.PhaseFinal, RunID: "run-quick-actions", Workflow: wf, Event: mrEvent(7),
		Status: workflows.StatusSucceeded, Results: &contract.Results{Actions: &contract.Actions{ActionSet: contract.ActionSet{Comment: hostile}}}}
	if out, err := forge.ApplyActions(context.Background(), rep, final); err != nil || len(out.Applied) != 1 {
		t.Fatalf("ApplyActions: %+v, %v", out, err)
	}
	marker := forge.ActionMarker(wf.Name, 7, hostile)
	found := false
	for _, nt := range f.notesBy(f.botID) {
		found = found || nt.Body == inertText+"\n\n"+marker
	}
	if !found {
		t.Errorf("no actions.json note %q among %+v", inertText+"\n\n"+marker, f.notesBy(f.botID))
	}

	sent := 0
	for _, r := range f.allRequests() {
		if !reNotes.MatchString(r.Path) && !reNote.MatchString(r.Path) || r.Method == "GET" {
			continue
		}
		var in struct{ Body string }
		if err := json.Unmarshal([]byte(r.Body), &in); err != nil {
			t.Fatalf("%s %s: %v", r.Method, r.Path, err)
		}
		sent++
		if qa := quickActions(in.Body); len(qa) > 0 {
			t.Errorf("%s %s: GitLab would run %q", r.Method, r.Path, qa)
		}
		if strings.Contains(in.Body, `\\/`) {
			t.Errorf("%s %s: escaped twice:\n%s", r.Method, r.Path, in.Body)
		}
	}
	if sent < 3 {
		t.Errorf("%d note bodies sent, want the run note created, edited and the actions note", sent)
	}
}

// TestTruncationCountsEscapes: a report body of quick action lines cut to
// the note limit stays within it once its lines are escaped.
func TestTruncationCountsEscapes(t *testing.T) {
	f := newFakeGitLab(t)
	x := newRun(t, newReporter(t, f, nil), "run-long-quick", workflow("mr-review", "sticky", false), mrEvent(9))
	x.Finish(workflows.StatusSucceeded, strings.Repeat("/approve this\n", 80000))
	nt := f.note(x.Must(contract.PhaseFinal).CommentID)
	if n := utf8.RuneCountInString(nt.Body); n > noteLimit || n < noteLimit*9/10 || !strings.Contains(nt.Body, "Truncated by hookrun") {
		t.Errorf("note of %d characters, want at most %d; truncation note present: %v", n, noteLimit, strings.Contains(nt.Body, "Truncated by hookrun"))
	}
	if qa := quickActions(nt.Body); len(qa) > 0 {
		t.Errorf("GitLab would run %d lines, the first %q", len(qa), qa[0])
	}
}
