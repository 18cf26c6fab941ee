package ingress

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Refused /retry comments are answered on the pull request, not only in
// the webhook answer (which only the forge's webhook log shows): a short
// reply comment through the forge's Actor, listing what was not re-run
// and why. A reply rather than a line in a workflow's sticky comment:
// that comment is the runner's rendering of a run's report (its next
// report would drop the line), and a refusal may name no workflow (no
// failed run to re-run). At most one reply per pull request per
// refusalReplyInterval in this process (a commenter repeating /retry
// gets one answer, not one per comment); a redelivered comment finds its
// reply by its marker and posts none.

// refusalReplyInterval is the least time between two refusal replies on
// one pull request.
const refusalReplyInterval = time.Minute

// refusalReplyTimeout bounds the forge calls of one reply (made after the
// webhook is answered).
const refusalReplyTimeout = 30 * time.Second

// maxRefusalLines bounds the reasons one reply lists.
const maxRefusalLines = 10

// refusalReplies remembers when each pull request last got a reply.
type refusalReplies struct {
	mu   sync.Mutex
	last map[string]time.Time // forge/repo#number → when its last reply was sent
}

// allow reports whether the pull request key may get a reply at now, and
// if so counts it; entries older than the interval are dropped.
func (r *refusalReplies) allow(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.last[key]; ok && now.Sub(t) < refusalReplyInterval {
		return false
	}
	for k, t := range r.last {
		if now.Sub(t) >= refusalReplyInterval {
			delete(r.last, k)
		}
	}
	if r.last == nil {
		r.last = map[string]time.Time{}
	}
	r.last[key] = now
	return true
}

// answerRefusedRetry replies on ev's pull request when its /retry comment
// was refused in part or whole: refused are the answer's skipped entries
// the retry added. The reply is posted in the background; a failure is
// logged.
func (s *Server) answerRefusedRetry(ev *workflows.Event, refused []decide.Skip) {
	cmd := s.cfg.Commands.RetryCommand()
	if len(refused) == 0 || cmd == "" || ev.Kind != workflows.KindComment || ev.PullRequest == nil {
		return
	}
	if _, ok := workflows.CommandOf(cmd, ev); !ok {
		return
	}
	f := s.cfg.Forges.Get(ev.Forge)
	a, ok := f.(forge.Actor)
	if !ok || f.Credentials() != nil {
		s.logger.Debug("not answering a refused retry on the pull request: the forge cannot comment", "forge", ev.Forge)
		return
	}
	issue := forge.EventIssue(ev)
	if !s.refusals.allow(string(ev.Forge)+"/"+issue.String(), s.now()) {
		s.logger.Info("not answering a refused retry on the pull request: answered one within the interval",
			"forge", ev.Forge, "pull_request", issue.String(), "interval", refusalReplyInterval)
		return
	}
	trigger := ev.DeliveryID
	if ev.Comment != nil && ev.Comment.ID != 0 {
		trigger = strconv.FormatInt(ev.Comment.ID, 10)
	}
	// The marker names the /retry comment: its redelivery posts no second reply.
	marker := forge.ActionMarker(cmd, issue.Number, "refused "+trigger)
	body := refusalBody(cmd, ev.Sender, refused) + "\n\n" + marker
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), refusalReplyTimeout)
		defer cancel()
		if _, err := a.Comment(ctx, issue, marker, body); err != nil {
			s.logger.Warn("answering a refused retry on the pull request", "forge", ev.Forge, "pull_request", issue.String(), "err", err)
		}
	}()
}

// refusalBody is the reply's text: who asked, and each refusal.
func refusalBody(cmd, sender string, refused []decide.Skip) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`%s`", cmd)
	if sender != "" {
		fmt.Fprintf(&b, " from @%s", sender)
	}
	b.WriteString(": not re-run")
	for i, r := range refused {
		if i == maxRefusalLines {
			fmt.Fprintf(&b, "\n- and %d more", len(refused)-i)
			break
		}
		// A reason can carry forge text (a label, a lookup's error):
		// shown as text, it closes no marker and mentions no one.
		if r.Workflow == cmd {
			fmt.Fprintf(&b, "\n- %s", forge.Text(r.Reason))
		} else {
			fmt.Fprintf(&b, "\n- `%s`: %s", r.Workflow, forge.Text(r.Reason))
		}
	}
	return b.String()
}
