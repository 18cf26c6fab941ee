package slack

import (
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// TestAppliesDecidesItself: the Slack reporter takes the reports of runs
// started by a Slack command, and no other (a forge's event, a chat
// platform it does not speak, a report without an event), so the
// composition root asks each reporter in turn and names no case itself
// (prow crier's ShouldReport).
func TestAppliesDecidesItself(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	slackRun := &contract.RunReport{Event: &workflows.Event{Kind: workflows.KindChat, Forge: "forge-of-the-repo",
		Chat: &workflows.Chat{Platform: workflows.ChatSlack}}}
	for _, c := range []struct {
		name string
		rep  *contract.RunReport
		want bool
	}{
		{"a Slack command's run", slackRun, true},
		{"a forge event's run", &contract.RunReport{Event: &workflows.Event{Kind: workflows.KindPullRequest, Forge: "forge-of-the-repo"}}, false},
		{"another chat platform", &contract.RunReport{Event: &workflows.Event{Kind: workflows.KindChat, Chat: &workflows.Chat{Platform: "elsewhere"}}}, false},
		{"no event", &contract.RunReport{}, false},
		{"no report", nil, false},
	} {
		if got := r.Applies(c.rep); got != c.want {
			t.Errorf("%s: Applies = %v, want %v", c.name, got, c.want)
		}
	}
}
