package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// Schedules run workflows on JetStream's own message scheduler (ADR-51,
// nats-server ≥ 2.14): each Schedule is a schedule message on
// hookrun.schedules.def.<id> of the stream HOOKRUN_SCHEDULES, which
// allows message schedules and keeps one message per subject, so the
// latest definition replaces the one before. The server (the stream's
// leader, in a cluster) publishes a tick on hookrun.schedules.tick.<id>
// at each time the schedule names; one durable consumer, shared by every
// process that consumes ticks, hands each tick to one of them. There is no
// timer of hookrun's own and no leader election: a tick exists once, in
// the stream.
//
// A tick the server would have fired while it was down is fired once, as
// soon as it is back (nats-server keeps the schedule's pending time, then
// skips ahead to the next time after now): whoever makes runs of ticks
// drops one handled well after it was due (decide.Decider.LateTick), from
// the tick's time, its Nats-Schedule-Next and when the tick before it
// said it was due (Tick.Expected, schedules_due.go).
const (
	StreamSchedules    = "HOOKRUN_SCHEDULES"
	scheduleDefPrefix  = "hookrun.schedules.def."
	scheduleTickPrefix = "hookrun.schedules.tick."
	scheduleConsumer   = "hookrun-schedule-ticks"
)

// ErrNoMessageSchedules: the NATS server ignored the schedule stream's
// AllowMsgSchedules, as a server before 2.14 does.
var ErrNoMessageSchedules = errors.New("the NATS server does not keep message schedules (it needs nats-server 2.14 or later)")

// Schedule is one workflow trigger's schedule, as stored in its schedule
// message (and copied by the server into each tick).
type Schedule struct {
	// ID names the schedule: [A-Za-z0-9_-]+, one per workflow and
	// trigger (ScheduleID).
	ID       string          `json:"id"`
	Workflow string          `json:"workflow"`
	Trigger  int             `json:"trigger"`            // the trigger's index in on:
	Spec     string          `json:"schedule"`           // as the workflow writes it: 5-field cron, @every 30m, @hourly, @daily
	Timezone string          `json:"timezone,omitempty"` // IANA zone of a cron schedule; "" = UTC
	Repo     string          `json:"repo"`               // the repository a run acts on
	Forge    workflows.Forge `json:"forge,omitempty"`
}

var scheduleIDRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ScheduleID is the id of a workflow's trigger's schedule.
func ScheduleID(workflow string, trigger int) string { return fmt.Sprintf("%s-%d", workflow, trigger) }

// NatsSchedule is spec as nats-server's scheduler takes it: a 5-field
// cron gets a seconds field of 0 (the server's cron has six fields);
// @every <duration> and the predefined @hourly, @daily, @weekly,
// @monthly, @yearly pass as they are. What a valid spec is, is
// workflows.CheckSchedule's rule.
func NatsSchedule(spec string) (string, error) {
	if err := workflows.CheckSchedule(spec); err != nil {
		return "", err
	}
	spec = strings.TrimSpace(spec)
	if d, ok := strings.CutPrefix(spec, "@every"); ok {
		dur, _ := time.ParseDuration(strings.TrimSpace(d)) // checked
		return "@every " + dur.String(), nil
	}
	if strings.HasPrefix(spec, "@") {
		return spec, nil
	}
	return "0 " + strings.Join(strings.Fields(spec), " "), nil
}

// SchedulesOf are the schedules of the workflows' schedule triggers, one
// per workflow and trigger: what Sync keeps in the stream.
func SchedulesOf(wfs []*workflows.Workflow) []Schedule {
	var out []Schedule
	for _, w := range wfs {
		for i, t := range w.On {
			if t.Event != workflows.KindSchedule {
				continue
			}
			out = append(out, Schedule{ID: ScheduleID(w.Name, i), Workflow: w.Name, Trigger: i,
				Spec: t.Schedule, Timezone: t.Timezone, Repo: t.Repo, Forge: t.Forge})
		}
	}
	return out
}

// Schedules is the schedule stream of a Queue.
type Schedules struct {
	q *Queue
	s jetstream.Stream
}

// Schedules creates (or updates) the schedule stream and its tick
// consumer, and returns it.
func (q *Queue) Schedules(ctx context.Context) (*Schedules, error) {
	s, err := q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              StreamSchedules,
		Description:       "hookrun workflow schedules (message schedules) and their ticks",
		Subjects:          []string{scheduleDefPrefix + ">", scheduleTickPrefix + ">", scheduleDuePrefix + ">"},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          q.cfg.Replicas,
		MaxMsgsPerSubject: 1, // the latest definition replaces the one before; a tick, a due record the one before
		Discard:           jetstream.DiscardOld,
		AllowMsgSchedules: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating stream %s: %w", StreamSchedules, err)
	}
	if !s.CachedInfo().Config.AllowMsgSchedules { // a server before 2.14 ignores the field
		return nil, fmt.Errorf("creating stream %s: %w", StreamSchedules, ErrNoMessageSchedules)
	}
	_, err = s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       scheduleConsumer,
		FilterSubject: scheduleTickPrefix + ">",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       DefaultAckWait,
		MaxDeliver:    DefaultMaxDeliver,
		// A consumer made now takes the ticks from now on: none fired
		// before it existed is run late.
		DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("creating consumer %s: %w", scheduleConsumer, err)
	}
	return &Schedules{q: q, s: s}, nil
}

// Sync makes the stored schedules those of defs: a new or changed one is
// published (replacing the one before), an unchanged one is left alone
// (publishing it again would restart its timer), and one no longer in
// defs is purged (the workflow or its trigger went). A schedule published
// or purged loses its due record (schedules_due.go).
func (s *Schedules) Sync(ctx context.Context, defs []Schedule) error {
	want := map[string]bool{}
	for _, d := range defs {
		if !scheduleIDRe.MatchString(d.ID) {
			return fmt.Errorf("syncing schedules: id %q is not [A-Za-z0-9_-]+", d.ID)
		}
		pattern, err := NatsSchedule(d.Spec)
		if err != nil {
			return fmt.Errorf("syncing schedule %s: %w", d.ID, err)
		}
		subj := scheduleDefPrefix + d.ID
		want[subj] = true
		body, err := json.Marshal(d)
		if err != nil {
			return err
		}
		msg := nats.NewMsg(subj)
		msg.Data = body
		msg.Header.Set(jetstream.ScheduleHeader, pattern)
		msg.Header.Set(jetstream.ScheduleTargetHeader, scheduleTickPrefix+d.ID)
		if d.Timezone != "" && !strings.HasPrefix(pattern, "@every ") {
			msg.Header.Set(jetstream.ScheduleTimeZoneHeader, d.Timezone)
		}
		if last, err := s.s.GetLastMsgForSubject(ctx, subj); err == nil && bytes.Equal(last.Data, body) &&
			last.Header.Get(jetstream.ScheduleHeader) == pattern && last.Header.Get(jetstream.ScheduleTimeZoneHeader) == msg.Header.Get(jetstream.ScheduleTimeZoneHeader) {
			continue
		} else if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("reading schedule %s: %w", d.ID, err)
		}
		if _, err := s.q.js.PublishMsg(ctx, msg); err != nil {
			return fmt.Errorf("publishing schedule %s: %w", d.ID, err)
		}
		if err := s.forgetDue(ctx, d.ID); err != nil {
			return err
		}
	}
	info, err := s.s.Info(ctx, jetstream.WithSubjectFilter(scheduleDefPrefix+">"))
	if err != nil {
		return fmt.Errorf("listing schedules: %w", err)
	}
	for subj := range info.State.Subjects {
		if want[subj] {
			continue
		}
		id := strings.TrimPrefix(subj, scheduleDefPrefix)
		if err := s.s.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			return fmt.Errorf("removing schedule %s: %w", id, err)
		}
		if err := s.forgetDue(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// Defined are the schedules stored now, by id.
func (s *Schedules) Defined(ctx context.Context) ([]Schedule, error) {
	info, err := s.s.Info(ctx, jetstream.WithSubjectFilter(scheduleDefPrefix+">"))
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	var out []Schedule
	for subj := range info.State.Subjects {
		m, err := s.s.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("reading schedule %s: %w", strings.TrimPrefix(subj, scheduleDefPrefix), err)
		}
		var d Schedule
		if err := json.Unmarshal(m.Data, &d); err != nil {
			return nil, fmt.Errorf("reading schedule %s: %w", strings.TrimPrefix(subj, scheduleDefPrefix), err)
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Schedule) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Tick is one firing of a schedule.
type Tick struct {
	Schedule Schedule
	Seq      uint64    // the tick's stream sequence: unique per tick
	At       time.Time // when the server fired it
	// Next is when the server fires the schedule next, as the tick's
	// Nats-Schedule-Next header says (zero without one). The server counts
	// an @every interval from the time the tick was due, so Next less the
	// interval is that time, except after an outage longer than the
	// interval: then it counts from the tick it fires on coming back.
	Next time.Time
	// Expected is when the tick was due as hookrun knows it: the Next of
	// the tick of the same definition handled before it (zero: none, as
	// for a definition's first tick; schedules_due.go).
	Expected time.Time
}

// Key identifies the tick across redeliveries: the delivery id of the run
// it starts, so that a tick handed out twice (a consumer died before its
// ack) still makes one run (PublishDelivery's dedupe).
func (t Tick) Key() string { return fmt.Sprintf("schedule-%s-%d", t.Schedule.ID, t.Seq) }

// Consume hands each tick to handle, in whichever process of all those
// consuming gets it (one durable consumer); a tick handle fails is
// handed out again. It returns when ctx ends.
func (s *Schedules) Consume(ctx context.Context, handle func(context.Context, Tick) error) error {
	c, err := s.s.Consumer(ctx, scheduleConsumer)
	if err != nil {
		return fmt.Errorf("finding consumer %s: %w", scheduleConsumer, err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		var t Tick
		md, err := m.Metadata()
		if err == nil {
			err = json.Unmarshal(m.Data(), &t.Schedule)
		}
		if err != nil {
			s.q.log.Error("dropping a malformed schedule tick", "subject", m.Subject(), "err", err)
			_ = m.Term()
			return
		}
		t.Seq, t.At = md.Sequence.Stream, md.Timestamp
		if next, err := time.Parse(time.RFC3339Nano, m.Headers().Get(jetstream.ScheduleNextHeader)); err == nil {
			t.Next = next
		}
		if err := s.remember(ctx, &t, m.Data()); err != nil {
			s.q.log.Warn("schedule tick not handled; handed out again", "schedule", t.Schedule.ID, "err", err)
			_ = m.NakWithDelay(time.Second)
			return
		}
		if err := handle(ctx, t); err != nil {
			s.q.log.Warn("schedule tick not handled; handed out again", "schedule", t.Schedule.ID, "err", err)
			_ = m.NakWithDelay(time.Second)
			return
		}
		_ = m.DoubleAck(ctx)
	})
	if err != nil {
		return fmt.Errorf("consuming schedule ticks: %w", err)
	}
	<-ctx.Done()
	cc.Stop()
	return nil
}
