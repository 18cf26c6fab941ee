package workflows

import (
	"strings"
	"testing"
)

// TestPresentationGroupsAsTheStatesMean: every state has its row, and
// its tone agrees with what the state means (Terminal, Passed), so that
// the web UI, comments and Slack, which all read the table, group alike.
func TestPresentationGroupsAsTheStatesMean(t *testing.T) {
	all := []Status{StatusQueued, StatusPending, StatusRunning, StatusSucceeded, StatusPartiallySucceeded,
		StatusFailed, StatusSkipped, StatusCancelled}
	if len(presentations) != len(all) {
		t.Fatalf("%d rows for %d states", len(presentations), len(all))
	}
	for _, s := range all {
		p, ok := presentations[s]
		if !ok {
			t.Fatalf("no row for %s", s)
		}
		if p.Label != strings.ReplaceAll(string(s), "_", " ") || p.Emoji == "" || !strings.HasPrefix(p.Slack, ":") {
			t.Errorf("%s: row %+v", s, p)
		}
		switch {
		case !s.Terminal() && p.Tone != ToneWait && p.Tone != ToneLive:
			t.Errorf("%s is not terminal but its tone is %s", s, p.Tone)
		case s.Terminal() && s.Passed() != (p.Tone == ToneOK || p.Tone == TonePartial || s == StatusSkipped):
			t.Errorf("%s: passed %v, tone %s", s, s.Passed(), p.Tone)
		case s == StatusFailed && p.Tone != ToneBad:
			t.Errorf("failed has tone %s", p.Tone)
		}
	}
	if p := Status("paused_for_ever").Present(); p.Tone != ToneWait || p.Label != "paused for ever" {
		t.Errorf("an unknown state is shown as %+v, want a waiting one labelled with its name", p)
	}
}
