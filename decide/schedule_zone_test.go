package decide_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/workflows"
)

// noWorkflows is a decide.Workflows with none: LateTick reads none.
type noWorkflows struct{}

func (noWorkflows) Workflows() []*workflows.Workflow { return nil }

// A cron schedule with a timezone reaches the server with its zone
// (Nats-Schedule-Time-Zone) and fires at its minute in that zone: the
// schedule names the next minute, at least 5 s away, as a clock in
// Asia/Kathmandu (UTC+05:45) reads it; read in UTC, or in any zone a whole
// number of hours from UTC, the same fields name a time at least 15
// minutes away. The tick comes at that minute, says the next one is a day
// later, and hookrun's own late-tick check (decide.Decider.LateTick, which
// reads the cron in the zone too) takes it as on time. A 5-field cron
// fires on a minute: the test waits for the next one (up to 65 s), beside
// the package's other parallel tests.
func TestScheduleInATimezoneFiresAtItsTime(t *testing.T) {
	t.Parallel()
	const zone = "Asia/Kathmandu"
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(5 * time.Second).Truncate(time.Minute).Add(time.Minute)
	local := due.In(loc)
	def := queue.Schedule{ID: queue.ScheduleID("kathmandu", 0), Workflow: "kathmandu", Spec: fmt.Sprintf("%d %d * * *", local.Minute(), local.Hour()),
		Timezone: zone, Repo: "o/r"}

	q := queuetest.Open(t, queue.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Until(due)+20*time.Second)
	defer cancel()
	s, err := q.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx, []queue.Schedule{def}); err != nil {
		t.Fatalf("syncing %+v: %v", def, err)
	}
	st, err := q.Shared().JetStream.Stream(ctx, queue.StreamSchedules)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := st.GetLastMsgForSubject(ctx, "hookrun.schedules.def."+def.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stored.Header.Get(jetstream.ScheduleHeader), "0 "+def.Spec; got != want {
		t.Errorf("stored schedule %q, want %q", got, want)
	}
	if got := stored.Header.Get(jetstream.ScheduleTimeZoneHeader); got != zone {
		t.Errorf("stored schedule's time zone %q, want %q", got, zone)
	}

	ticks := make(chan queue.Tick, 4)
	consumed := make(chan error, 1)
	go func() {
		consumed <- s.Consume(ctx, func(_ context.Context, tk queue.Tick) error { ticks <- tk; return nil })
	}()
	var tk queue.Tick
	select {
	case tk = <-ticks:
	case <-ctx.Done():
		t.Fatalf("no tick of %q in %s by %s (due %s)", def.Spec, zone, time.Now().UTC(), due.UTC())
	}
	if tk.At.Before(due) || tk.At.After(due.Add(3*time.Second)) || tk.Schedule != def {
		t.Errorf("tick of %+v at %s; want %+v at %s", tk.Schedule, tk.At.UTC(), def, due.UTC())
	}
	if want := due.Add(24 * time.Hour); !tk.Next.Equal(want) { // Kathmandu has no daylight saving time
		t.Errorf("the tick says the next is at %s, want %s", tk.Next.UTC(), want.UTC())
	}
	dec, err := decide.New(decide.Config{}, decide.Deps{Workflows: noWorkflows{}})
	if err != nil {
		t.Fatal(err)
	}
	if late := dec.LateTick(tk); late != "" {
		t.Errorf("the tick on time is late to hookrun: %s", late)
	}
	cancel()
	if err := <-consumed; err != nil {
		t.Error(err)
	}
}
