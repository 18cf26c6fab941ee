package workflows

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedules (Kind schedule) come from no forge and no user: a trigger
// `{schedule: "0 3 * * *", repo: myorg/app}` (or Dagu's top-level
// `schedule:` with the workflow's `repo:`) names when and on which
// repository. JetStream's message scheduler fires each tick once, in
// whichever server holds the stream (queue/schedules.go); the tick becomes
// an Event of kind schedule whose Schedule says which trigger fired and
// whose Forge, Repo and CloneURL are that trigger's, so that checkout,
// allow_repos and HOOKRUN_REPO apply as for a forge event. Nobody sends a
// schedule: Authorize lets every tick through (the workflow file, which
// only the operator writes, is what started it). A scheduled run has no
// issue or pull request: actions.json must name its targets.

// ActionTick is the action of a schedule event.
const ActionTick = "tick"

// ScheduleTick is the firing of a schedule trigger an event of kind
// schedule carries.
type ScheduleTick struct {
	Spec     string `json:"spec"`               // the trigger's schedule, as written: HOOKRUN_SCHEDULE
	Timezone string `json:"timezone,omitempty"` // the trigger's timezone; "" is UTC
	At       string `json:"at,omitempty"`       // when the scheduler fired, RFC 3339 in UTC
}

// schedulePredefined are the @ words a schedule may be, besides @every.
var schedulePredefined = []string{"@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually"}

// cronField is the range of one field of a 5-field cron expression and
// the names it may use instead of numbers.
type cronField struct {
	name     string
	min, max int
	names    []string // names[i] is min+i
}

var cronFields = []cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{name: "day of week", min: 0, max: 6, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// CheckSchedule checks a schedule as a workflow writes it: a 5-field cron
// expression (minute hour day-of-month month day-of-week, numbers, names
// of months and days, *, ranges a-b, steps /n and lists), `@every
// <duration>` of at least 1s, or one of @hourly, @daily, @midnight,
// @weekly, @monthly, @yearly, @annually. It is the one rule of the
// schedule syntax: the parser and queue.NatsSchedule call it, and it
// accepts only what nats-server's scheduler runs.
func CheckSchedule(spec string) error {
	spec = strings.TrimSpace(spec)
	if d, ok := strings.CutPrefix(spec, "@every"); ok {
		return checkEvery(strings.TrimSpace(d))
	}
	if strings.HasPrefix(spec, "@") {
		for _, p := range schedulePredefined {
			if spec == p {
				return nil
			}
		}
		return fmt.Errorf("unknown schedule %q (@every <duration>, %s)", spec, strings.Join(schedulePredefined, ", "))
	}
	c, err := parseCron(spec)
	if err != nil {
		return err
	}
	// A day of month no month has (30 2 *) never fires, unless the day of
	// week is restricted too (then either matches, as in cron).
	if c.anyWeekday {
		monthDays := []int{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
		for m := 1; m <= 12; m++ {
			for d := 1; d <= monthDays[m-1]; d++ {
				if c.sets[3][m] && c.sets[2][d] {
					return nil
				}
			}
		}
		return fmt.Errorf("schedule %q never fires: no month has that day", spec)
	}
	return nil
}

// cron is a parsed 5-field cron expression: the values each field names,
// and whether the day fields are unrestricted (* or ?, as nats-server's
// scheduler reads them: then both day fields must match, otherwise
// either).
type cron struct {
	sets               [5][]bool // minute, hour, day of month, month, day of week
	anyDay, anyWeekday bool
}

func parseCron(spec string) (cron, error) {
	f := strings.Fields(spec)
	if len(f) != len(cronFields) {
		return cron{}, fmt.Errorf("schedule %q has %d fields; want a 5-field cron (minute hour day-of-month month day-of-week), @every <duration>, @hourly or @daily", spec, len(f))
	}
	var c cron
	for i, cf := range cronFields {
		set, err := cf.parse(f[i])
		if err != nil {
			return cron{}, fmt.Errorf("schedule %q: %s: %w", spec, cf.name, err)
		}
		c.sets[i] = set
	}
	c.anyDay, c.anyWeekday = unrestricted(f[2]), unrestricted(f[4])
	return c, nil
}

// unrestricted is nats-server's reading of a day field as "any day": one
// of its parts is * or ? without a step over 1.
func unrestricted(field string) bool {
	for _, part := range strings.Split(field, ",") {
		rng, step, _ := strings.Cut(part, "/")
		if (rng == "*" || rng == "?") && (step == "" || step == "1") {
			return true
		}
	}
	return false
}

// names reports whether the minute of t (in its location) is one the
// expression names.
func (c cron) names(t time.Time) bool {
	if !c.sets[0][t.Minute()] || !c.sets[1][t.Hour()] || !c.sets[3][int(t.Month())] {
		return false
	}
	day, weekday := c.sets[2][t.Day()], c.sets[4][int(t.Weekday())]
	if c.anyDay || c.anyWeekday {
		return day && weekday
	}
	return day || weekday
}

// cronOfPredefined are the predefined schedules as the 5-field crons
// nats-server's scheduler reads them as.
var cronOfPredefined = map[string]string{
	"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@weekly": "0 0 * * 0",
	"@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
}

// LatestScheduled is the latest time in [from, to] that a schedule names:
// a cron expression's (or @hourly's, @daily's, ...) minute, in timezone
// ("" is UTC). ok is false when it names none there, and for @every, whose
// times depend on when the server started counting, not on the clock. It
// looks minute by minute, from to back: from and to should be minutes
// apart, not days.
func LatestScheduled(spec, timezone string, from, to time.Time) (at time.Time, ok bool) {
	spec = strings.TrimSpace(spec)
	if p, isPredefined := cronOfPredefined[spec]; isPredefined {
		spec = p
	}
	c, err := parseCron(spec)
	if err != nil {
		return time.Time{}, false
	}
	loc := time.UTC
	if timezone != "" {
		if loc, err = time.LoadLocation(timezone); err != nil {
			return time.Time{}, false
		}
	}
	for m := to.Truncate(time.Minute); !m.Before(from); m = m.Add(-time.Minute) {
		if c.names(m.In(loc)) {
			return m, true
		}
	}
	return time.Time{}, false
}

func checkEvery(d string) error {
	if d == "" {
		return errors.New("@every needs a duration: @every 30m")
	}
	dur, err := time.ParseDuration(d)
	if err != nil || !durationSyntax.matches(d) {
		return fmt.Errorf("@every %s: invalid duration (use a number and a unit: 90s, 30m, 1h30m)", d)
	}
	if dur < time.Second {
		return fmt.Errorf("@every %s: the interval must be at least 1s", d)
	}
	return nil
}

// parse reads one field: a list of *, ?, a, a-b, each with an optional
// /step, into the set of values it names.
func (cf cronField) parse(s string) ([]bool, error) {
	set := make([]bool, cf.max+1)
	for _, part := range strings.Split(s, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("step %q is not a positive number", stepText)
			}
			step = n
		}
		lo, hi := cf.min, cf.max
		if rng != "*" && rng != "?" {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = cf.value(a); err != nil {
				return nil, err
			}
			hi = lo
			switch {
			case isRange:
				if hi, err = cf.value(b); err != nil {
					return nil, err
				}
			case hasStep:
				hi = cf.max // "5/15": from 5 to the end
			}
			if lo > hi {
				return nil, fmt.Errorf("range %q runs backwards", rng)
			}
		}
		for v := lo; v <= hi; v += step {
			set[v] = true
		}
	}
	return set, nil
}

// value reads a number or a name within the field's range.
func (cf cronField) value(s string) (int, error) {
	for i, n := range cf.names {
		if strings.EqualFold(s, n) {
			return cf.min + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < cf.min || v > cf.max {
		return 0, fmt.Errorf("%d is out of range (%d-%d)", v, cf.min, cf.max)
	}
	return v, nil
}

// CheckTimezone checks a schedule's timezone: an IANA zone name
// (Europe/Berlin, UTC), and not for @every, whose interval has no time of
// day.
func CheckTimezone(zone, spec string) error {
	if zone == "" || zone == "Local" {
		return fmt.Errorf("timezone %q is not an IANA zone name (Europe/Berlin, UTC)", zone)
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return fmt.Errorf("unknown timezone %q (an IANA zone name: Europe/Berlin, UTC)", zone)
	}
	if strings.HasPrefix(strings.TrimSpace(spec), "@every") {
		return errors.New("timezone has no meaning for @every (an interval, not a time of day); remove it")
	}
	return nil
}

// matchSchedule matches a schedule event against a schedule trigger: the
// tick must be of this trigger's schedule, on its repository.
func (t *Trigger) matchSchedule(e *Event) string {
	switch s := e.Schedule; {
	case s == nil:
		return "schedule event without its schedule"
	case s.Spec != t.Schedule || s.Timezone != t.Timezone:
		return fmt.Sprintf("the tick is of schedule %q, not %q", s.Spec, t.Schedule)
	case e.Forge != t.Forge || e.Repo != t.Repo:
		return fmt.Sprintf("the tick is for %s %s, not the trigger's %s %s", e.Forge, e.Repo, t.Forge, t.Repo)
	}
	return ""
}

// ScheduleEvent is the event of one tick of a schedule on repo of
// forge: kind schedule, delivery the tick's key (one run per tick,
// whichever server publishes it). CloneURL is left to the caller, which
// knows the forges' origins.
func ScheduleEvent(forge Forge, repo string, tick ScheduleTick, delivery string) *Event {
	return &Event{Kind: KindSchedule, Action: ActionTick, DeliveryID: delivery, Forge: forge, Repo: repo, Schedule: &tick}
}
