package ui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// The deliveries pages (issue 29): /deliveries lists the stored webhook
// deliveries with what became of each, filtered as GET /api/v1/deliveries
// is; /deliveries/:forge/:id shows one (headers, event, every workflow
// considered and why it did not run, its runs and replays) with a Replay
// button, which does what POST /api/v1/deliveries/:id/replay does.

// Deliveries is what the deliveries pages read and replay through
// (*ingress.Server).
type Deliveries interface {
	ParseDeliveryFilter(q map[string][]string, strict bool) (stores.DeliveryFilter, error)
	Deliveries(ctx context.Context, f stores.DeliveryFilter) ([]stores.DeliverySummary, string, error)
	Delivery(ctx context.Context, forge workflows.Forge, id string) (*ingress.DeliveryView, error)
	ReplayDelivery(ctx context.Context, forge workflows.Forge, id string) (replay string, runs int, err error)
}

var _ Deliveries = (*ingress.Server)(nil)

// outcomeTones are the outcomes' badge classes.
var outcomeTones = map[string]string{
	stores.OutcomeRan: workflows.ToneOK, stores.OutcomeSkipped: workflows.ToneOff,
	stores.OutcomeRefused: workflows.ToneBad, stores.OutcomeDuplicate: workflows.ToneWait,
}

func outcomeCSS(o string) string { return outcomeTones[o] }

type deliveriesPage struct {
	page
	Filter     stores.DeliveryFilter
	Outcomes   []string
	Deliveries []stores.DeliverySummary
	Next       string // URL of the next page, "" on the last
	Error      string
}

func (u *ui) deliveries(c echo.Context) error {
	p := deliveriesPage{page: u.base(c, "Deliveries"), Outcomes: stores.Outcomes}
	code := http.StatusOK
	f, err := u.d.Deliveries.ParseDeliveryFilter(c.QueryParams(), false)
	p.Filter = f
	if err != nil {
		p.Error, code = err.Error(), http.StatusBadRequest
		return u.render(c, code, "deliveries", "layout", p)
	}
	f.Limit = u.cfg.PageSize
	list, next, err := u.d.Deliveries.Deliveries(c.Request().Context(), f)
	switch {
	case errors.Is(err, stores.ErrBadCursor):
		p.Error, code = "That page no longer exists; start from the newest.", http.StatusBadRequest
	case err != nil:
		u.d.Logger.Warn("ui: listing deliveries", "err", err)
		p.Error, code = "The queue is unavailable; try again in a moment.", http.StatusServiceUnavailable
	}
	p.Deliveries = list
	p.Next = nextPage(c, "/deliveries", next)
	return u.render(c, code, "deliveries", "layout", p)
}

// nextPage is the URL of the list page after cursor, with the request's
// filters; "" when there is none.
func nextPage(c echo.Context, path, cursor string) string {
	if cursor == "" {
		return ""
	}
	q := c.QueryParams()
	q.Set("cursor", cursor)
	return path + "?" + q.Encode()
}

type deliveryPage struct {
	page
	D       *ingress.DeliveryView
	Headers [][2]string // sorted by name
	Replay  string      // the replay just made (?replayed=)
}

// deliveryPath is the page of a delivery.
func deliveryPath(forge workflows.Forge, id string) string {
	return "/deliveries/" + url.PathEscape(string(forge)) + "/" + url.PathEscape(id)
}

func (u *ui) delivery(c echo.Context) error {
	forge, id := workflows.Forge(c.Param("forge")), c.Param("id")
	v, err := u.d.Deliveries.Delivery(c.Request().Context(), forge, id)
	if errors.Is(err, stores.ErrNotReceived) {
		return u.fail(c, http.StatusNotFound, "No such delivery is stored (it may have expired).")
	}
	if err != nil {
		u.d.Logger.Warn("ui: reading a delivery", "delivery", id, "err", err)
		return u.fail(c, http.StatusServiceUnavailable, "The queue is unavailable; try again in a moment.")
	}
	p := deliveryPage{page: u.base(c, "Delivery "+id), D: v, Replay: c.QueryParam("replayed")}
	for k, val := range v.Headers {
		p.Headers = append(p.Headers, [2]string{k, val})
	}
	slices.SortFunc(p.Headers, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return u.render(c, http.StatusOK, "delivery", "layout", p)
}

func (u *ui) replay(c echo.Context) error {
	forge, id := workflows.Forge(c.Param("forge")), c.Param("id")
	rid, runs, err := u.d.Deliveries.ReplayDelivery(c.Request().Context(), forge, id)
	if errors.Is(err, stores.ErrNotReceived) {
		return u.fail(c, http.StatusNotFound, "No such delivery is stored (it may have expired).")
	}
	if err != nil {
		u.d.Logger.Info("ui: replay refused", "delivery", id, "err", err)
		return u.fail(c, http.StatusConflict, "The delivery could not be replayed: "+err.Error())
	}
	u.d.Logger.Info("ui: replay", "delivery", id, "replay", rid, "runs", runs)
	return c.Redirect(http.StatusSeeOther, deliveryPath(forge, id)+"?replayed="+url.QueryEscape(rid))
}
