package decide

import (
	"fmt"
	"strings"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// Tick decides the run of one schedule tick (queue/schedules.go): the
// loaded workflow must still have that schedule (Match), its repository
// must be in allow_repos, and the forge's origin gives the clone URL. The
// decision is one run, or one Skip saying why the server's configuration
// refuses the tick for good (allow_repos, a forge with no origin). An
// error means the tick should be handed out again: the workflow is not
// loaded here as the tick's definition has it (a reload or a rolling
// update in progress). The run's delivery id is the tick's key, so that a
// tick handed out twice is one run (the queue's delivery dedupe).
func (d *Decider) Tick(t queue.Tick) (Decision, error) {
	def := t.Schedule
	tick := workflows.ScheduleTick{Spec: def.Spec, Timezone: def.Timezone}
	if !t.At.IsZero() {
		tick.At = t.At.UTC().Format(time.RFC3339)
	}
	ev := workflows.ScheduleEvent(def.Forge, def.Repo, tick, t.Key())
	w := d.Workflow(def.Workflow)
	if w == nil {
		return Decision{}, fmt.Errorf("starting the run of tick %s: workflow %s is not loaded", ev.DeliveryID, def.Workflow)
	}
	if m := w.Match(ev); !m.Matched {
		return Decision{}, fmt.Errorf("starting the run of tick %s: workflow %s has no such schedule now: %s", ev.DeliveryID, def.Workflow, m.Reason)
	}
	skip := func(reason string) (Decision, error) {
		return Decision{Skipped: []Skip{{w.Name, reason}}}, nil
	}
	if !d.Allowed(def.Repo) {
		return skip(fmt.Sprintf("repository %s is not in the server's allow_repos", def.Repo))
	}
	origin, err := d.deps.Forges.Get(def.Forge).GitOrigin()
	if err != nil {
		return skip(err.Error())
	}
	if ok, reason := authorize(w, ev, ""); !ok {
		return skip(reason)
	}
	ev.CloneURL = cloneURL(origin, def.Repo)
	return Decision{Runs: []*queue.RunRequest{d.newRunRequest(w, ev, "")}}, nil
}

// LateTickBound is how late a tick may be handled and still start its
// run: a minute, or half the time to the schedule's next tick when that
// is shorter (@every 10s: 5 s). It is there for what delays an on-time
// tick: the server's timer (a quarter second), a leader election, a tick
// handed back once (a second), a serve restarting. A tick later than
// that fired after an outage (nats-server fires a tick it missed as soon
// as it is back) or waited in the consumer while no serve or ingress
// took ticks: the work it stands for is better left to the next tick,
// due no later than it would have been, than done hours late (a nightly
// job at noon). Half the period keeps a late tick of a short schedule from
// running next to the tick after it.
const LateTickBound = time.Minute

// LateTick says why tick t, handled now, is too late to start its run,
// or "" when it is not. When t was due: for @every, its Nats-Schedule-Next
// less the interval (the server counts the interval from the due time);
// for a cron, the latest time the schedule names at or before the server
// fired it. The server fires a tick at or after its time, never before.
//
// After an outage longer than an @every interval the server counts the
// interval from the tick it fires on coming back, so that tick's
// Nats-Schedule-Next cannot tell it was due earlier; the tick handled
// before it can (t.Expected, its Nats-Schedule-Next): a tick fired more
// than the bound after that is late too, whatever its own header says.
//
// A server that stopped without saving its timers (killed, out of
// memory, an embedded one whose serve crashed) fires again, when it is
// back, a tick it fired before: such a tick fired more than the bound
// before the time the tick before it gave, or names no later next time
// than that tick did; the time it stands for has run, and it starts no
// run either.
func (d *Decider) LateTick(t queue.Tick) string {
	now, bound := d.now(), LateTickBound
	due, period, ok := tickDue(t)
	if period > 0 && period/2 < bound {
		bound = period / 2
	}
	switch {
	case !t.Expected.IsZero() && t.Expected.Sub(t.At) > bound:
		return fmt.Sprintf("the tick fired at %s, %s before it was due at %s (the tick before it said so): a tick the server fired again after it restarted, whose time has run",
			t.At.UTC().Format(time.RFC3339), t.Expected.Sub(t.At).Round(time.Second), t.Expected.UTC().Format(time.RFC3339))
	case !t.Expected.IsZero() && !t.Next.IsZero() && !t.Next.After(t.Expected):
		return fmt.Sprintf("the tick names %s as the next time, as the tick before it did: a tick the server fired again after it restarted, whose time has run",
			t.Next.UTC().Format(time.RFC3339))
	case !ok:
		return fmt.Sprintf("the tick fired at %s and its schedule names no time in the %s before: it was due earlier (a tick more than %s late starts no run)",
			t.At.UTC().Format(time.RFC3339), LateTickBound, bound)
	case !t.Expected.IsZero() && t.At.Sub(t.Expected) > bound:
		return fmt.Sprintf("the tick was due at %s (the tick before it said so) and fired at %s, %s late (a tick more than %s late starts no run)",
			t.Expected.UTC().Format(time.RFC3339), t.At.UTC().Format(time.RFC3339), t.At.Sub(t.Expected).Round(time.Second), bound)
	case now.Sub(due) > bound:
		return fmt.Sprintf("the tick was due at %s and is handled at %s, %s late (a tick more than %s late starts no run)",
			due.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), now.Sub(due).Round(time.Second), bound)
	}
	return ""
}

// tickDue is when tick t was due and the time from then to the
// schedule's next tick (0: unknown); ok is false for a cron tick whose
// schedule names no time in the LateTickBound before it fired (it was due
// before that).
func tickDue(t queue.Tick) (due time.Time, period time.Duration, ok bool) {
	spec := strings.TrimSpace(t.Schedule.Spec)
	if every, isEvery := strings.CutPrefix(spec, "@every"); isEvery {
		interval, err := time.ParseDuration(strings.TrimSpace(every))
		if err != nil || t.Next.IsZero() {
			return t.At, interval, true // checked when the workflow loaded; a server that says no next time
		}
		return t.Next.Add(-interval), interval, true
	}
	due, ok = workflows.LatestScheduled(spec, t.Schedule.Timezone, t.At.Add(-LateTickBound), t.At)
	if ok && t.Next.After(due) {
		period = t.Next.Sub(due)
	}
	return due, period, ok
}

// cloneURL is the HTTPS clone URL of repo on the forge whose git origin
// is origin.
func cloneURL(origin, repo string) string {
	return strings.TrimSuffix(origin, "/") + "/" + repo + ".git"
}
