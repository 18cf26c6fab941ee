package workflows

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCheckSchedule(t *testing.T) {
	for _, ok := range []string{"0 3 * * *", " 0  3 * * * ", "*/15 9-17 * jan,JUL 1-5", "5/10 * ? * sun", "0 0 29 2 *", "0 0 31 * 1",
		"@every 30m", "@every 1s", "@every 1h30m", "@hourly", "@daily", "@weekly", "@monthly", "@yearly"} {
		if err := CheckSchedule(ok); err != nil {
			t.Errorf("CheckSchedule(%q) = %v, want nil", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"":               "has 0 fields",
		"0 0 3 * * *":    "has 6 fields",
		"60 * * * *":     "minute: 60 is out of range (0-59)",
		"* 24 * * *":     "hour: 24 is out of range",
		"* * 0 * *":      "day of month: 0 is out of range (1-31)",
		"* * * 13 *":     "month: 13 is out of range",
		"* * * * 7":      "day of week: 7 is out of range (0-6)",
		"* * * * funday": `"funday" is not a number`,
		"*/0 * * * *":    `step "0" is not a positive number`,
		"5-1 * * * *":    `range "5-1" runs backwards`,
		"0 0 31 4 *":     "never fires",
		"@every 500ms":   "at least 1s",
		"@every":         "needs a duration",
		"@every 1d":      "invalid duration",
		"@every -1h":     "invalid duration",
		"@sometimes":     "unknown schedule",
	} {
		err := CheckSchedule(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSchedule(%q) = %v, want an error containing %q", bad, err, want)
		}
	}
}

func TestCheckTimezone(t *testing.T) {
	if err := CheckTimezone("Europe/Berlin", "0 3 * * *"); err != nil {
		t.Errorf("Europe/Berlin: %v", err)
	}
	for _, c := range []struct{ zone, spec, want string }{
		{"Mars/Olympus", "@daily", "unknown timezone"},
		{"Local", "@daily", "not an IANA zone name"},
		{"", "@daily", "not an IANA zone name"},
		{"UTC", "@every 1h", "no meaning for @every"},
	} {
		if err := CheckTimezone(c.zone, c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckTimezone(%q, %q) = %v, want %q", c.zone, c.spec, err, c.want)
		}
	}
}

// A tick matches the trigger it is of (schedule, zone, repository) and
// no other; it is authorized without a sender; steps see its schedule as
// HOOKRUN_SCHEDULE; it has no issue or pull request.
func TestScheduleEventMatches(t *testing.T) {
	w, err := Parse("nightly.yaml", []byte(`
schedule: "0 3 * * *"
repo: o/app
on:
  - schedule: "@every 30m"
    repo: o/other
    forge: gitlab
  - schedule: "0 3 * * *"
    repo: o/app
    timezone: Europe/Berlin
    if: event.Repo == "o/app"
  - event: issue
steps: [{id: a, run: x}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.On) != 4 || w.On[3].Event != KindSchedule || w.On[3].Repo != "o/app" || w.On[3].Forge != GitHub {
		t.Fatalf("triggers %+v", w.On)
	}
	for _, c := range []struct {
		name    string
		ev      *Event
		trigger int // -1: no match
		reason  string
	}{
		{"interval", ScheduleEvent(GitLab, "o/other", ScheduleTick{Spec: "@every 30m"}, "d"), 0, ""},
		{"zoned cron", ScheduleEvent(GitHub, "o/app", ScheduleTick{Spec: "0 3 * * *", Timezone: "Europe/Berlin"}, "d"), 1, ""},
		{"top-level schedule", ScheduleEvent(GitHub, "o/app", ScheduleTick{Spec: "0 3 * * *"}, "d"), 3, ""},
		{"another repository", ScheduleEvent(GitHub, "o/other", ScheduleTick{Spec: "@every 30m"}, "d"), -1, "not the trigger's gitlab o/other"},
		{"a schedule no trigger has", ScheduleEvent(GitHub, "o/app", ScheduleTick{Spec: "@hourly"}, "d"), -1, `not "0 3 * * *"`},
		{"no tick", &Event{Kind: KindSchedule, Action: ActionTick, Forge: GitHub, Repo: "o/app"}, -1, "without its schedule"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := w.Match(c.ev)
			switch {
			case c.trigger < 0 && (m.Matched || !strings.Contains(m.Reason, c.reason)):
				t.Errorf("Match = %+v, want no match because %q", m, c.reason)
			case c.trigger >= 0 && (!m.Matched || m.Trigger != c.trigger):
				t.Errorf("Match = %+v, want trigger %d", m, c.trigger)
			}
		})
	}
	ev := ScheduleEvent(GitHub, "o/app", ScheduleTick{Spec: "0 3 * * *"}, "schedule-nightly-3-7")
	if ok, reason := w.Authorize(ev); !ok {
		t.Errorf("Authorize = false, %s", reason)
	}
	if !slices.Contains(ev.Env(), EnvVar{"HOOKRUN_SCHEDULE", "0 3 * * *"}) || !slices.Contains(ev.Env(), EnvVar{"HOOKRUN_EVENT", "schedule"}) {
		t.Errorf("env %v", ev.Env())
	}
	if ev.Number() != 0 || ev.HeadSHA() != "" {
		t.Errorf("a tick has number %d, head %q", ev.Number(), ev.HeadSHA())
	}
	if other := (&Event{Kind: KindPush, Action: "pushed", Repo: "o/app"}); slices.ContainsFunc(other.Env(), func(e EnvVar) bool { return e.Name == "HOOKRUN_SCHEDULE" }) {
		t.Error("a push has HOOKRUN_SCHEDULE")
	}
}

// LatestScheduled finds the latest minute a cron schedule names within a
// window, in the schedule's zone, with cron's day rule (either day field
// when both are restricted); @every names no clock time.
func TestLatestScheduled(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		spec, zone, from, to, want string // want "" = none
	}{
		{"0 3 * * *", "", "2026-12-06T02:59:05Z", "2026-12-06T03:00:05Z", "2026-12-06T03:00:00Z"},
		{"0 3 * * *", "", "2026-12-06T03:00:01Z", "2026-12-06T03:01:00Z", ""},
		{"0 3 * * *", "", "2026-12-06T02:00:00Z", "2026-12-06T02:59:59Z", ""},
		{"*/15 * * * *", "", "2026-12-06T03:00:00Z", "2026-12-06T03:31:10Z", "2026-12-06T03:30:00Z"},
		{"@daily", "", "2026-12-05T23:59:00Z", "2026-12-06T00:00:00.3Z", "2026-12-06T00:00:00Z"},
		{"@hourly", "", "2026-12-06T03:00:30Z", "2026-12-06T03:01:00Z", ""},
		{"0 3 * * *", "Europe/Berlin", "2026-12-06T01:59:00Z", "2026-12-06T02:00:20Z", "2026-12-06T02:00:00Z"},
		{"0 3 * * *", "Europe/Berlin", "2026-12-06T02:59:00Z", "2026-12-06T03:00:20Z", ""},
		// 2026-12-06 is a Sunday, the 6th: with both day fields restricted
		// either names it (odd days, or Sundays); with one of them any
		// day (*, */1), both must.
		{"0 3 */2 * sun", "", "2026-12-06T03:00:00Z", "2026-12-06T03:00:00Z", "2026-12-06T03:00:00Z"},
		{"0 3 1 * mon", "", "2026-12-06T03:00:00Z", "2026-12-06T03:00:00Z", ""},
		{"0 3 */1 * mon", "", "2026-12-06T03:00:00Z", "2026-12-06T03:00:00Z", ""},
		{"0 3 * * sun", "", "2026-12-06T03:00:00Z", "2026-12-06T03:00:00Z", "2026-12-06T03:00:00Z"},
		{"@every 1m", "", "2026-12-06T03:00:00Z", "2026-12-06T03:10:00Z", ""},
	} {
		got, ok := LatestScheduled(c.spec, c.zone, at(c.from), at(c.to))
		if want := c.want; (want == "") != !ok || ok && !got.Equal(at(want)) {
			t.Errorf("LatestScheduled(%q, %q, %s, %s) = %s, %v; want %q", c.spec, c.zone, c.from, c.to, got, ok, want)
		}
	}
}
