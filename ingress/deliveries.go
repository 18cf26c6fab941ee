package ingress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// The deliveries view (issue 29): GET /api/v1/deliveries lists the stored
// deliveries (every verified one: those not matched against the
// workflows too, unmatched.go), newest first, with what became of each
// (stores' outcomes) and, for an unmatched one, why; GET /api/v1/deliveries/:id shows one: the headers that say
// what was sent, the event as normalized, every workflow considered
// (matched or not, and why it did not run), the runs it started and its
// replays. The web UI's deliveries pages read the same through Server's
// Deliveries, Delivery and ReplayDelivery.

// DeliveryIndex lists stored deliveries and notes replays on them
// (*stores.ReceivedStore).
type DeliveryIndex interface {
	List(ctx context.Context, f stores.DeliveryFilter) ([]stores.DeliverySummary, string, error)
	AddReplay(ctx context.Context, forge workflows.Forge, id string, r stores.Replay) error
}

var _ DeliveryIndex = (*stores.ReceivedStore)(nil)

// DeliveryView is one stored delivery as GET /api/v1/deliveries/:id shows it.
type DeliveryView struct {
	*stores.Received
	Outcome string `json:"outcome,omitempty"` // of its first copy; "" when stored before the deliveries view
	// Normalized is the event as the workflows saw it at receipt (the
	// body normalized again, with the label change decided then), without
	// the raw payload; nil when the body no longer normalizes.
	Normalized *workflows.Event `json:"normalized,omitempty"`
}

// errNoDeliveries: this server stores no deliveries (its publisher keeps
// none).
var errNoDeliveries = errors.New("this server stores no deliveries")

// deliveryIndex is the deliveries' index, nil when deliveries are not
// stored.
func (s *Server) deliveryIndex() DeliveryIndex {
	i, _ := s.deliveries.(DeliveryIndex)
	return i
}

// deliveryParams are the query parameters GET /api/v1/deliveries accepts.
var deliveryParams = map[string]bool{"forge": true, "repo": true, "event": true, "outcome": true, "limit": true, "cursor": true}

// ParseDeliveryFilter reads a deliveries filter from query parameters (the
// API's and the UI's); an error is the 400's message.
func (s *Server) ParseDeliveryFilter(q map[string][]string, strict bool) (stores.DeliveryFilter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	for k := range q {
		if strict && !deliveryParams[k] {
			return stores.DeliveryFilter{}, fmt.Errorf("unknown parameter %q (want forge, repo, event, outcome, limit, cursor)", k)
		}
	}
	f := stores.DeliveryFilter{Forge: workflows.Forge(get("forge")), Repo: get("repo"), Event: get("event"),
		Outcome: get("outcome"), Cursor: get("cursor"), Limit: defaultListLimit}
	if f.Forge != "" && !s.webhookForge(f.Forge) {
		return f, errors.New(s.badForge(f.Forge))
	}
	if f.Outcome != "" && !slices.Contains(stores.Outcomes, f.Outcome) {
		return f, fmt.Errorf("outcome must be one of %s, got %q", strings.Join(stores.Outcomes, ", "), f.Outcome)
	}
	if l := get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxListLimit {
			return f, fmt.Errorf("limit must be between 1 and %d", maxListLimit)
		}
		f.Limit = n
	}
	return f, nil
}

// Deliveries is a page of stored deliveries, newest first, and the cursor
// of the next ("" when none); stores.ErrBadCursor for a cursor no page
// handed out.
func (s *Server) Deliveries(ctx context.Context, f stores.DeliveryFilter) ([]stores.DeliverySummary, string, error) {
	idx := s.deliveryIndex()
	if idx == nil {
		return nil, "", errNoDeliveries
	}
	return idx.List(ctx, f)
}

// Delivery is the stored delivery id of forge ("" for Config.DefaultForge)
// as the deliveries page shows it; stores.ErrNotReceived when none is
// stored.
func (s *Server) Delivery(ctx context.Context, forge workflows.Forge, id string) (*DeliveryView, error) {
	if forge == "" {
		forge = s.cfg.DefaultForge
	}
	if s.deliveries == nil || !s.webhookForge(forge) {
		return nil, fmt.Errorf("reading delivery %s: %w", id, stores.ErrNotReceived)
	}
	d, err := s.deliveries.Get(ctx, forge, id)
	if err != nil {
		return nil, err
	}
	v := &DeliveryView{Received: d, Outcome: d.Outcome()}
	if d.Reason != "" {
		return v, nil // not matched against the workflows: no body to normalize
	}
	if ev, _, err := normalizeTolerant(s.cfg.Forges.Get(forge), d.Event, d.Raw, d.ID); err == nil {
		asReceived(ev, d)
		ev.Raw = nil
		v.Normalized = ev
	}
	return v, nil
}

// ReplayDelivery replays a stored delivery (the UI's button: the API's
// POST /api/v1/deliveries/:id/replay) and returns the replay's delivery id
// and how many runs it queued.
func (s *Server) ReplayDelivery(ctx context.Context, forge workflows.Forge, id string) (string, int, error) {
	if forge == "" {
		forge = s.cfg.DefaultForge
	}
	if !s.webhookForge(forge) {
		return "", 0, fmt.Errorf("replaying delivery %s: %w", id, stores.ErrNotReceived)
	}
	ans, err := s.replayNoted(ctx, forge, id)
	return ans.Delivery, len(ans.Runs), err
}

// replayNoted replays a stored delivery and notes the replay on it; a
// note that fails is logged (the replay's runs are queued).
func (s *Server) replayNoted(ctx context.Context, forge workflows.Forge, id string) (replayAnswer, error) {
	ans, err := s.replay(ctx, forge, id)
	if err != nil {
		return ans, err
	}
	if idx := s.deliveryIndex(); idx != nil {
		r := stores.Replay{ID: ans.Delivery, At: s.now().UTC(), Runs: []stores.ReceivedRun{}}
		for _, run := range ans.Runs {
			r.Runs = append(r.Runs, stores.ReceivedRun{ID: run.ID, Workflow: run.Workflow, RerunOf: run.RerunOf})
		}
		if err := idx.AddReplay(context.WithoutCancel(ctx), forge, id, r); err != nil {
			s.logger.Warn("noting a replay on its delivery", "forge", forge, "delivery", id, "replay", ans.Delivery, "err", err)
		}
	}
	return ans, nil
}

// listDeliveries answers GET /api/v1/deliveries: {"deliveries": [...newest
// first...], "next_cursor": "..."} ("" when no more).
func (a *api) listDeliveries(c echo.Context) error {
	f, err := a.srv.ParseDeliveryFilter(c.QueryParams(), true)
	if err != nil {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": err.Error()})
	}
	page, next, err := a.srv.Deliveries(c.Request().Context(), f)
	switch {
	case errors.Is(err, stores.ErrBadCursor):
		return c.JSON(http.StatusBadRequest, map[string]string{"error": "cursor is not one a previous page returned"})
	case errors.Is(err, errNoDeliveries):
		return c.JSON(http.StatusNotFound, map[string]string{"error": err.Error()})
	case err != nil:
		a.srv.logger.Error("listing deliveries", "err", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "listing deliveries: queue unavailable"})
	}
	if page == nil {
		page = []stores.DeliverySummary{}
	}
	return c.JSON(http.StatusOK, map[string]any{"deliveries": page, "next_cursor": next})
}

// getDelivery answers GET /api/v1/deliveries/:id (?forge=NAME, default
// Config.DefaultForge).
func (a *api) getDelivery(c echo.Context) error {
	forge := workflows.Forge(c.QueryParam("forge"))
	if forge != "" && !a.srv.webhookForge(forge) {
		return c.JSON(http.StatusBadRequest, map[string]string{"error": a.srv.badForge(forge)})
	}
	v, err := a.srv.Delivery(c.Request().Context(), forge, c.Param("id"))
	switch {
	case errors.Is(err, stores.ErrNotReceived):
		return c.JSON(http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no stored delivery %q (deliveries are kept for %s)", c.Param("id"), a.srv.receivedTTL())})
	case err != nil:
		a.srv.logger.Error("reading a delivery", "delivery", c.Param("id"), "err", err)
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "reading the delivery: queue unavailable"})
	}
	return c.JSON(http.StatusOK, v)
}
