package decide

import (
	"strings"
	"testing"

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// TestRerequestAuthorizedOnTheRunsPullRequest: a rerequest names no pull
// request, so a re-run is authorized on the run's own: a fork's run stays
// a fork's (refused under allow_forks: false without a trusted role), a
// /retry comment is authorized as it is.
func TestRerequestAuthorizedOnTheRunsPullRequest(t *testing.T) {
	w := &workflows.Workflow{Name: "open"} // no author_association list, allow_forks false
	ev := &workflows.Event{Kind: workflows.KindRerequest, Sender: "octo", AuthorAssociation: "NONE",
		Rerequest: &workflows.Rerequest{HeadSHA: "abc"}}
	fork := &stores.RunRecord{Event: workflows.Event{PullRequest: &workflows.PullRequest{Number: 3, Fork: true}}}
	same := &stores.RunRecord{Event: workflows.Event{PullRequest: &workflows.PullRequest{Number: 4}}}
	if ok, reason := authorize(w, authorizing(ev, fork), ""); ok || !strings.Contains(reason, "fork") {
		t.Errorf("re-run of a fork's run: %v %q, want refused", ok, reason)
	}
	if ok, reason := authorize(w, authorizing(ev, same), ""); !ok {
		t.Errorf("re-run of a same-repository run: refused %q", reason)
	}
	if ev.PullRequest != nil {
		t.Error("authorizing changed the delivery's event")
	}
	comment := &workflows.Event{Kind: workflows.KindComment}
	if authorizing(comment, fork) != comment {
		t.Error("a /retry comment is not authorized as it is")
	}
}
