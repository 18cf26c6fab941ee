package ingress

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// Unmatched deliveries: a verified delivery that ingress does not match
// against the workflows at all (its repository is outside allow_repos,
// hookrun does not handle its event, its payload cannot be read or has a
// field of an unexpected type, a ping) is stored all the same, so that the
// deliveries view says what became of it and why (issue 29: "repository
// not allowed" was invisible). It is stored as a summary, without its
// body: such deliveries may be anyone's who installed the same App on
// their own repository, and a stored summary is a few hundred bytes
// where a body may be megabytes. It is written before the answer, as
// every stored delivery is, but a failure is only logged: the answer
// stays the one such a delivery always had (nothing of it needs a
// redelivery). An unverified delivery (--insecure-no-verify) is anyone's
// and is not stored.

// maxUnmatchedReason bounds a stored reason (a decoder's error may quote
// the payload).
const maxUnmatchedReason = 512

// unmatched is why a delivery was not matched against the workflows, as
// its webhook answer says it.
type unmatched struct {
	refused bool // outcome refused (else skipped)
	reason  string
}

// keepUnmatched stores d, a delivery not matched against the workflows
// for why, with what is known of its event (ev; nil when it did not
// normalize) and the headers that say what was sent, when it was verified
// and deliveries are stored.
func (s *Server) keepUnmatched(c echo.Context, d *stores.Received, ev *workflows.Event, verified bool, why unmatched) {
	if !verified || s.deliveries == nil {
		return
	}
	u := *d // d's body is the request's, recycled once answered
	u.Raw, u.Headers = nil, tellingHeaders(c.Request().Header)
	u.Reason, u.Refused = why.reason, why.refused
	if n := maxUnmatchedReason; len(u.Reason) > n {
		for !utf8.RuneStart(u.Reason[n]) {
			n--
		}
		u.Reason = u.Reason[:n] + "…"
	}
	if ev != nil {
		u.Kind, u.Repo = string(ev.Kind), ev.Repo
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), s.cfg.PublishTimeout)
	defer cancel()
	if err := s.deliveries.KeepUnmatched(ctx, &u); err != nil {
		s.deliveryLogger(c, d.ID).Warn("an unmatched delivery is not stored", "forge", d.Forge, "event", d.Event, "delivery", d.ID, "err", err)
	}
}

// errNotReplayable: the stored delivery was not matched against the
// workflows and keeps no body.
var errNotReplayable = errors.New("not replayable")

// notReplayable is the replay's refusal of a stored unmatched delivery:
// the refusal it got when it came.
func notReplayable(d *stores.Received) error {
	return fmt.Errorf("delivery %s was not matched against the workflows (%s) and its body is not kept; redeliver it from the forge: %w",
		d.ID, d.Reason, errNotReplayable)
}
