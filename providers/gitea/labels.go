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
	// of repo on forge as of at (the payload's updated_at; zero when it
	// has none) and returns the ones recorded before; known is false when
	// there were none (never seen, or expired). When at is before the time
	// recorded, the delivery is stale: nothing is recorded, and previous is
	// what stays.
	SwapLabels(ctx context.Context, forge workflows.Forge, repo string, number int, labels []string, at time.Time) (previous []string, known, stale bool, err error)
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
// unknown. Each call overwrites what the memory saw last, unless ev is
// older (staleness): only a delivery's first receipt may ask, never a
// stored delivery shown or replayed.
//
// Gitea's own Redeliver sends an old payload under a new delivery id, so
// it is a first receipt here. Its issue's or pull request's updated_at
// tells it: Gitea moves that time on every label change (each writes a
// label comment, which updates the issue) and a label_updated payload
// carries it, at one-second granularity. A payload older than the one
// remembered neither overwrites the memory nor is decided against it:
// its change stays unknown. One of the same second is taken as current,
// since two real changes in one second are told apart only that way; a
// redelivery of a payload from the very second of the change remembered
// last is therefore still read against it.
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
	prev, known, stale, err := f.labels.SwapLabels(ctx, Name, ev.Repo, number, labels, updatedAt(ev))
	labelChange(ev, prev, known && !stale && err == nil)
	return isLabelChange(ev)
}

// updatedAt is ev's UpdatedAt (the issue's or pull request's updated_at,
// as Normalize made it), zero when it does not parse.
func updatedAt(ev *workflows.Event) time.Time {
	t, err := time.Parse(time.RFC3339, ev.UpdatedAt)
	if err != nil {
		return time.Time{}
	}
	return t
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
