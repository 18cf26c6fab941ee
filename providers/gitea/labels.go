package gitea

import (
	"context"
	"slices"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// LabelMemory remembers the labels hookrun saw last on each issue or pull
// request, so that a label_updated delivery (which carries the labels
// after the change, not the one added or removed) can be told apart: the
// composition root gives one kept in a bucket with a TTL.
type LabelMemory interface {
	// SwapLabels records labels as those of issue or pull request number
	// of repo on forge and returns the ones recorded before; known is
	// false when there were none (never seen, or expired).
	SwapLabels(ctx context.Context, forge workflows.Forge, repo string, number int, labels []string) (previous []string, known bool, err error)
}

// labelMemoryTimeout bounds one SwapLabels: a memory that is down must
// not hold the delivery.
const labelMemoryTimeout = 2 * time.Second

// RecallLabels records the labels of a pull_request or issues event, as
// Normalize made it, in the forge's LabelMemory (Config.Labels) and, for
// label_updated and label_cleared, tells from what was there before which
// label was added or removed (labelChange); it reports whether ev is such
// a label change (its Action, Label and LabelActionUnknown are then the
// ones decided). Without a memory, or when it fails, the change stays
// unknown. Each call overwrites what the memory saw last: only a
// delivery's first receipt may ask, never a stored delivery shown or
// replayed.
func (f *Forge) RecallLabels(ctx context.Context, ev *workflows.Event) bool {
	number := 0
	switch {
	case ev.Kind == workflows.KindPullRequest && ev.PullRequest != nil:
		number = ev.PullRequest.Number
	case ev.Kind == workflows.KindIssue && ev.Issue != nil:
		number = ev.Issue.Number
	}
	if f.labels == nil || number <= 0 {
		return isLabelChange(ev)
	}
	ctx, cancel := context.WithTimeout(ctx, labelMemoryTimeout)
	defer cancel()
	labels := ev.Labels
	if labels == nil {
		labels = []string{}
	}
	prev, known, err := f.labels.SwapLabels(ctx, Name, ev.Repo, number, labels)
	labelChange(ev, prev, known && err == nil)
	return isLabelChange(ev)
}

// isLabelChange: ev says a label was added or removed.
func isLabelChange(ev *workflows.Event) bool {
	return ev.Action == "labeled" || ev.Action == "unlabeled"
}

// labelChange sets the action and Label of a labeled or unlabeled event
// (label_updated, label_cleared) from the labels seen before (prev, when
// known): labeled with the first label added, else unlabeled with the
// first one removed. When that cannot be told (prev unknown, or the same
// labels as now), a label_updated stays labeled with LabelActionUnknown
// set, and a trigger on labeled or unlabeled matches it. Other events are
// left alone; a label the payload names is kept.
func labelChange(ev *workflows.Event, prev []string, known bool) {
	if !isLabelChange(ev) {
		return
	}
	ev.LabelActionUnknown = false
	if known {
		added, removed := missing(ev.Labels, prev), missing(prev, ev.Labels)
		switch {
		case len(added) > 0:
			ev.Action = "labeled"
			setLabel(ev, added[0])
			return
		case len(removed) > 0:
			ev.Action = "unlabeled"
			setLabel(ev, removed[0])
			return
		}
	}
	if ev.Action == "labeled" { // label_cleared (unlabeled) says what happened
		ev.LabelActionUnknown = true
	}
}

func setLabel(ev *workflows.Event, name string) {
	if ev.Label == "" {
		ev.Label = name
	}
}

// missing lists the labels of a that b lacks, in a's order.
func missing(a, b []string) []string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, l)
		}
	}
	return out
}
