package gitea

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// mapMemory is a LabelMemory in a map (labels in m, their times in at),
// keeping stores.LabelStore's contract; err, when set, is every answer.
type mapMemory struct {
	m   map[string][]string
	at  map[string]time.Time
	err error
}

func (m *mapMemory) SwapLabels(_ context.Context, forge workflows.Forge, repo string, number int, labels []string, at time.Time) ([]string, bool, bool, error) {
	if m.err != nil {
		return nil, false, false, m.err
	}
	if m.at == nil {
		m.at = map[string]time.Time{}
	}
	k := fmt.Sprintf("%s %s#%d", forge, repo, number)
	prev, ok := m.m[k]
	if ok && !at.IsZero() && at.Before(m.at[k]) {
		return prev, true, true, nil
	}
	m.m[k] = slices.Clone(labels)
	if at.After(m.at[k]) {
		m.at[k] = at
	}
	return prev, ok, false, nil
}

var _ LabelMemory = (*mapMemory)(nil)

// receive normalizes a delivery as ingress does on its first receipt:
// Normalize, then RecallLabels.
func receive(t *testing.T, f *Forge, event string, body []byte, id string) *workflows.Event {
	t.Helper()
	ev, err := f.Normalize(event, body, id)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	f.RecallLabels(context.Background(), ev)
	return ev
}

func labelForge(t *testing.T, mem LabelMemory) *Forge {
	t.Helper()
	f, err := NewForge(Config{BaseURL: "http://gitea.test/", Webhook: forge.Webhook{WebhookEnabled: true, WebhookSecrets: []string{"s"}}, Labels: mem})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// withLabels is the recorded label_updated delivery with the pull
// request's labels set to names.
func withLabels(t *testing.T, action string, names ...string) []byte {
	return patchJSON(t, "testdata/gitea/pull_request_label.payload.json", func(m map[string]any) {
		m["action"] = action
		var ls []any
		for i, n := range names {
			ls = append(ls, map[string]any{"id": i + 1, "name": n, "color": "e11d21"})
		}
		obj(m, "pull_request")["labels"] = ls
	})
}

// TestLabelUpdatedAddedOrRemoved: with a memory of the labels seen last,
// a label_updated that adds one is labeled with it, one that removes one
// is unlabeled with it; the opened delivery before them is remembered.
func TestLabelUpdatedAddedOrRemoved(t *testing.T) {
	f := labelForge(t, &mapMemory{m: map[string][]string{}})
	steps := []struct {
		event  string
		body   []byte
		action string
		label  string
	}{
		{"pull_request", readFile(t, "testdata/gitea/pull_request.payload.json"), "opened", ""},
		{"pull_request", withLabels(t, "label_updated", "ai-review"), "labeled", "ai-review"},
		{"pull_request", withLabels(t, "label_updated", "ai-review", "bug"), "labeled", "bug"},
		{"pull_request", withLabels(t, "label_updated", "bug"), "unlabeled", "ai-review"},
		{"pull_request", withLabels(t, "label_cleared"), "unlabeled", "bug"},
	}
	for i, s := range steps {
		ev := receive(t, f, s.event, s.body, "d")
		if ev.Action != s.action || ev.Label != s.label || ev.LabelActionUnknown {
			t.Errorf("step %d: action %q label %q unknown %v, want %q %q known", i, ev.Action, ev.Label, ev.LabelActionUnknown, s.action, s.label)
		}
	}
}

// TestLabelUpdatedUnknown: without a memory, with a memory that never saw
// the pull request, one that fails, or labels unchanged since, a
// label_updated is labeled with LabelActionUnknown (a trigger on labeled
// or unlabeled matches it) and no label; label_cleared is unlabeled.
func TestLabelUpdatedUnknown(t *testing.T) {
	body := readFile(t, "testdata/gitea/pull_request_label.payload.json") // labels: ai-review
	unlabeledTrigger, err := workflows.Parse("w.yml", []byte("name: w\non: [{event: pull_request, actions: [unlabeled]}]\nsteps: [{id: s, run: 'true'}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	same := &mapMemory{m: map[string][]string{}}
	receive(t, labelForge(t, same), "pull_request", body, "d")
	for name, f := range map[string]*Forge{
		"no memory":      labelForge(t, nil),
		"never seen":     labelForge(t, &mapMemory{m: map[string][]string{}}),
		"memory fails":   labelForge(t, &mapMemory{err: errors.New("bucket down")}),
		"labels as seen": labelForge(t, same),
	} {
		ev := receive(t, f, "pull_request", body, name)
		if ev.Action != "labeled" || !ev.LabelActionUnknown || ev.Label != "" {
			t.Errorf("%s: action %q unknown %v label %q, want labeled, unknown, no label", name, ev.Action, ev.LabelActionUnknown, ev.Label)
		}
		if !unlabeledTrigger.Match(ev).Matched {
			t.Errorf("%s: a trigger on unlabeled does not match the unknown change", name)
		}
	}
	ev, err := Normalize("pull_request", withLabels(t, "label_cleared"), "d")
	if err != nil || ev.Action != "unlabeled" || ev.LabelActionUnknown {
		t.Errorf("label_cleared without memory: %+v, %v", ev, err)
	}
}

// TestRecordedLabelDeliveries: the deliveries a real Gitea 1.26 sent
// (make gitea-test with HOOKRUN_GITEA_RECORD, testdata/gitea/README.md)
// when pull request 1 was opened, labeled bug, then unlabeled: both label
// deliveries are label_updated; normalized in order with a memory, the
// first is labeled bug and the second unlabeled bug.
func TestRecordedLabelDeliveries(t *testing.T) {
	f := labelForge(t, &mapMemory{m: map[string][]string{}})
	for _, s := range []struct{ file, action, label string }{
		{"pull_request_opened_nolabels", "opened", ""},
		{"pull_request_label_added", "labeled", "bug"},
		{"pull_request_label_removed", "unlabeled", "bug"},
	} {
		ev := receive(t, f, "pull_request", readFile(t, "testdata/gitea/"+s.file+".payload.json"), s.file)
		if ev.Action != s.action || ev.Label != s.label || ev.LabelActionUnknown {
			t.Errorf("%s: %s %q (unknown %v), want %s %q", s.file, ev.Action, ev.Label, ev.LabelActionUnknown, s.action, s.label)
		}
	}
}

// labelsAt is withLabels of a label_updated with the pull request's
// updated_at set to at.
func labelsAt(t *testing.T, at time.Time, names ...string) []byte {
	var m map[string]any
	if err := json.Unmarshal(withLabels(t, "label_updated", names...), &m); err != nil {
		t.Fatal(err)
	}
	obj(m, "pull_request")["updated_at"] = at.Format(time.RFC3339)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRedeliveredLabelChangeIsUnknown: with [a b] remembered as of T,
// Gitea redelivering an old "add a" (labels [a], updated_at before T,
// under a new delivery id) is a change of unknown action, not unlabeled
// b, and leaves [a b] at T remembered, so the next real "add c" is
// labeled c. A change of the same second as T is still decided.
func TestRedeliveredLabelChangeIsUnknown(t *testing.T) {
	const pr = "gitea alice/demo#2"
	at := time.Date(2026, 12, 6, 9, 3, 5, 0, time.UTC)
	mem := &mapMemory{m: map[string][]string{}}
	f := labelForge(t, mem)
	receive(t, f, "pull_request", labelsAt(t, at, "a", "b"), "added b")

	ev := receive(t, f, "pull_request", labelsAt(t, at.Add(-time.Second), "a"), "redelivered")
	if ev.Action != "labeled" || !ev.LabelActionUnknown || ev.Label != "" {
		t.Errorf("redelivered add a: %s %q (unknown %v), want labeled, unknown, no label", ev.Action, ev.Label, ev.LabelActionUnknown)
	}
	if !slices.Equal(mem.m[pr], []string{"a", "b"}) || !mem.at[pr].Equal(at) {
		t.Errorf("after the redelivery the memory is %v at %v, want [a b] at %v", mem.m[pr], mem.at[pr], at)
	}
	for _, s := range []struct {
		at     time.Time
		labels []string
		action string
		label  string
	}{
		{at.Add(time.Second), []string{"a", "b", "c"}, "labeled", "c"},
		{at.Add(time.Second), []string{"a", "c"}, "unlabeled", "b"}, // the same second
	} {
		ev := receive(t, f, "pull_request", labelsAt(t, s.at, s.labels...), "real")
		if ev.Action != s.action || ev.Label != s.label || ev.LabelActionUnknown {
			t.Errorf("%v at %v: %s %q (unknown %v), want %s %q", s.labels, s.at, ev.Action, ev.Label, ev.LabelActionUnknown, s.action, s.label)
		}
	}
}

// issueWithLabels is the recorded label_updated delivery as an issues
// delivery (its pull request as the issue) with labels names.
func issueWithLabels(t *testing.T, action string, names ...string) []byte {
	return patchJSON(t, "testdata/gitea/pull_request_label.payload.json", func(m map[string]any) {
		var ls []any
		for i, n := range names {
			ls = append(ls, map[string]any{"id": i + 1, "name": n, "color": "e11d21"})
		}
		issue := obj(m, "pull_request")
		issue["labels"] = ls
		m["action"], m["issue"] = action, issue
		delete(m, "pull_request")
	})
}

// TestNormalizeLeavesTheMemoryAlone: Normalize, which shows and replays
// stored deliveries, neither reads nor writes the label memory (a
// label_updated is labeled, unknown); RecallLabels, a delivery's first
// receipt, does: it reports a label change (of an issue as of a pull
// request) with the label decided, and remembers other events' labels
// without reporting them as one.
func TestNormalizeLeavesTheMemoryAlone(t *testing.T) {
	const pr = "gitea alice/demo#2" // the pull request, and the issue of the same number
	mem := &mapMemory{m: map[string][]string{pr: {"old"}}}
	f := labelForge(t, mem)
	for _, b := range [][]byte{withLabels(t, "label_updated", "bug"), withLabels(t, "label_cleared"), issueWithLabels(t, "label_updated", "bug")} {
		for _, event := range []string{"pull_request", "issues"} {
			ev, err := f.Normalize(event, b, "d")
			if err != nil {
				continue // the other event's body
			}
			if ev.Label != "" || ev.LabelActionUnknown != (ev.Action == "labeled") {
				t.Errorf("Normalize decided a label change: %s %q (unknown %v)", ev.Action, ev.Label, ev.LabelActionUnknown)
			}
		}
	}
	if len(mem.m) != 1 || !slices.Equal(mem.m[pr], []string{"old"}) {
		t.Fatalf("Normalize wrote the memory: %v", mem.m)
	}
	for _, s := range []struct {
		event  string
		body   []byte
		change bool
		action string
		label  string
	}{
		{"pull_request", readFile(t, "testdata/gitea/pull_request.payload.json"), false, "opened", ""},
		{"issues", issueWithLabels(t, "opened", "old"), false, "opened", ""},
		{"issues", issueWithLabels(t, "label_updated", "old", "bug"), true, "labeled", "bug"},
		{"issues", issueWithLabels(t, "label_updated", "bug"), true, "unlabeled", "old"},
	} {
		ev, err := f.Normalize(s.event, s.body, "d")
		if err != nil {
			t.Fatal(err)
		}
		if got := f.RecallLabels(context.Background(), ev); got != s.change || ev.Action != s.action || ev.Label != s.label || ev.LabelActionUnknown {
			t.Errorf("%s %s: RecallLabels %v, %s %q (unknown %v); want %v, %s %q", s.event, s.action, got, ev.Action, ev.Label, ev.LabelActionUnknown, s.change, s.action, s.label)
		}
	}
}
