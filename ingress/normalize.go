package ingress

// Normalizing a verified delivery through its forge (forge.Webhooks),
// tolerant of fields whose JSON type drifted.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// ErrUnhandledEvent is wrapped by a forge's Normalize when the forge sent
// an event type hookrun does not turn into runs (a ping, a check run, a
// pipeline). The webhook routes answer such events with 202 and no runs.
// It is forge.ErrUnhandledEvent.
var ErrUnhandledEvent = forge.ErrUnhandledEvent

// ErrMalformedPayload is wrapped by a forge's Normalize when the body
// cannot be parsed, or lacks what the event type needs. The webhook routes
// answer it with 400. It is forge.ErrMalformedPayload.
var ErrMalformedPayload = forge.ErrMalformedPayload

// maxDrift bounds how many drifted fields one delivery may have before it
// is simply malformed.
const maxDrift = 8

// Drift is a payload field whose JSON type is not the one the forge
// documents (a push's "after": 123, a merge request's description that
// became an object): normalization read it as absent. A drifted field
// makes the delivery a 400 only when a workflow matched it, since only then
// does the run need what the field says.
type Drift struct {
	Field string `json:"field"` // JSON path, dot-separated: object_attributes.description
	Error string `json:"error"` // what the decoder said
}

// normalizeTolerant is the forge's Normalize that survives type drift: each field the
// decoder refuses for its type is removed from a copy of the body and the
// decode retried, up to maxDrift fields; ev.Raw stays the body as sent.
// Syntax errors, and drift beyond the bound, are still ErrMalformedPayload.
func normalizeTolerant(hooks forge.Webhooks, eventName string, body []byte, deliveryID string) (*workflows.Event, []Drift, error) {
	var drift []Drift
	decoded := body
	for {
		ev, err := hooks.Normalize(eventName, decoded, deliveryID)
		if err == nil {
			ev.Raw = body
			return ev, drift, nil
		}
		path, ok := typeErrorPath(err)
		if !ok || len(drift) == maxDrift || slices.ContainsFunc(drift, func(d Drift) bool { return d.Field == dotted(path) }) {
			return nil, drift, err
		}
		pruned, removed := removePath(decoded, path)
		if !removed {
			return nil, drift, err
		}
		drift = append(drift, Drift{Field: dotted(path), Error: innermost(err)})
		decoded = pruned
	}
}

// typeErrorPath is the path of the value a type error is about: from the
// JSON v2 engine's semantic error or encoding/json's UnmarshalTypeError
// (whichever decoder the forge's normalizer uses), as path segments.
func typeErrorPath(err error) ([]string, bool) {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && se.JSONPointer != "" && se.GoType != nil {
		var segs []string
		for tok := range se.JSONPointer.Tokens() {
			segs = append(segs, tok)
		}
		return segs, len(segs) > 0
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return strings.Split(te.Field, "."), true
	}
	return nil, false
}

func dotted(path []string) string { return strings.Join(path, ".") }

// innermost is the decoder's own words, without the wrapping.
func innermost(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs := j.Unwrap()
			u = errs[len(errs)-1]
		}
		err = u
	}
}

// removePath deletes the value at path from a JSON document (in every
// element where the path crosses an array and names no index, as
// encoding/json's paths do) and returns the re-encoded document.
func removePath(doc []byte, path []string) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if !remove(v, path) {
		return nil, false
	}
	out, err := json.Marshal(v)
	return out, err == nil
}

func remove(v any, path []string) bool {
	switch n := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			if _, ok := n[path[0]]; !ok {
				return false
			}
			delete(n, path[0])
			return true
		}
		child, ok := n[path[0]]
		return ok && remove(child, path[1:])
	case []any:
		if i, err := strconv.Atoi(path[0]); err == nil {
			if i < 0 || i >= len(n) {
				return false
			}
			if len(path) == 1 {
				n[i] = nil
				return true
			}
			return remove(n[i], path[1:])
		}
		any := false
		for _, e := range n {
			any = remove(e, path) || any
		}
		return any
	}
	return false
}

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
