package ingress

import (
	"context"

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// Label changes a forge's deliveries do not spell out: such a forge
// (labelRecaller) says only the labels after the change, and tells which
// one was added or removed from the labels it saw last on the issue or
// pull request, remembering the delivery's. That memory is only read and
// written on a delivery's first receipt; a redelivery, the deliveries view
// and a replay take the change decided then, kept with the stored delivery
// (stores.Received.LabelChange), so that looking at or replaying an old
// delivery never makes the memory forget what the forge sent since.

// labelRecaller is a forge whose normalized label changes stay unknown
// (LabelActionUnknown) until RecallLabels compares the event's labels with
// those it saw last, decides ev's action and label, and remembers ev's
// labels; it reports whether ev is a label change. Each call overwrites
// what was seen last, unless ev's payload is older than that (the forge
// sending an old one again under a new delivery id).
type labelRecaller interface {
	RecallLabels(ctx context.Context, ev *workflows.Event) bool
}

// recallLabels decides the label change of a delivery received now, when
// its forge is a labelRecaller, and notes it on received for the
// deliveries view and replays. A delivery already stored (a redelivery,
// whose first copy is kept) takes the change decided at its first
// receipt, leaving the memory alone.
func (s *Server) recallLabels(ctx context.Context, received *stores.Received, ev *workflows.Event) {
	r, ok := s.cfg.Forges.Get(received.Forge).(labelRecaller)
	if !ok || (ev.Kind != workflows.KindPullRequest && ev.Kind != workflows.KindIssue) {
		return
	}
	// Only a label change looks its delivery up (one read of the stored
	// deliveries): for any other event the memory's own check of the
	// payload's age keeps a redelivery from undoing what came since.
	if s.deliveries != nil && (ev.Action == "labeled" || ev.Action == "unlabeled") {
		if first, err := s.deliveries.Get(ctx, received.Forge, received.ID); err == nil {
			received.LabelChange = first.LabelChange
			asReceived(ev, first)
			return
		}
	}
	if r.RecallLabels(ctx, ev) {
		received.LabelChange = stores.LabelChangeOf(ev)
	}
}

// asReceived makes ev, stored delivery d normalized again, the event as
// it was taken at receipt: with the label change decided then. A delivery
// stored without one keeps what normalization says (for a label change
// its forge cannot tell by itself: unknown, which triggers on labeled
// and on unlabeled both match).
func asReceived(ev *workflows.Event, d *stores.Received) {
	d.LabelChange.Apply(ev)
}
