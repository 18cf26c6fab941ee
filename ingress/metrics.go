package ingress

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Delivery outcomes, the "outcome" label of hookrun_ingress_deliveries_total.
const (
	outcomeAccepted     = "accepted"     // at least one run published (or found as a duplicate)
	outcomeNoRun        = "no_run"       // handled event, but no workflow matched or was authorized
	outcomeUnhandled    = "unhandled"    // event type hookrun ignores
	outcomePing         = "ping"         // GitHub ping
	outcomeUnauthorized = "unauthorized" // bad or missing signature/token
	outcomeMalformed    = "malformed"    // missing headers or unparsable body
	outcomeTooLarge     = "too_large"    // body over the cap
	outcomeUnavailable  = "unavailable"  // the queue did not persist every run
	outcomeNotAllowed   = "not_allowed"  // repository outside allow_repos: ignored, nothing persisted
)

// metrics are one Server's counters and histogram, written in the
// Prometheus text exposition format (version 0.0.4) by writeTo. They are
// hand-rolled rather than built on client_golang: its package
// initialisation (default registry, Go and process collectors, protobuf)
// added about 6 ms to the start of every hookrun command, `hookrun run`
// included (docs/performance.md).
type metrics struct {
	deliveries *counterVec
	publish    *histogram
	runs       *counterVec
	start      time.Time
}

func newMetrics() *metrics {
	return &metrics{
		deliveries: newCounterVec("hookrun_ingress_deliveries_total",
			"Webhook deliveries received, by forge, event and outcome.", "forge", "event", "outcome"),
		publish: newHistogram("hookrun_ingress_publish_seconds",
			"Time to publish (and get every PubAck for) the run requests of one delivery.",
			.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10),
		runs: newCounterVec("hookrun_ingress_runs_created_total",
			"Run requests newly persisted (duplicates not counted), by forge and workflow.", "forge", "workflow"),
		start: time.Now(),
	}
}

// writeTo writes every family, then the process gauges operators expect.
func (m *metrics) writeTo(w io.Writer) error {
	var b strings.Builder
	m.deliveries.write(&b)
	m.publish.write(&b)
	m.runs.write(&b)
	writeGauge(&b, "go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	if rss, ok := residentBytes(); ok {
		writeGauge(&b, "process_resident_memory_bytes", "Resident memory size in bytes.", rss)
	}
	writeGauge(&b, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
		float64(m.start.UnixNano())/1e9)
	_, err := io.WriteString(w, b.String())
	return err
}

// counterVec is a counter family with labels.
type counterVec struct {
	name, help string
	labels     []string // in the order inc takes their values
	mu         sync.Mutex
	series     map[string]*series // by the values joined with \xff
}

type series struct {
	values []string
	n      uint64
}

func newCounterVec(name, help string, labels ...string) *counterVec {
	return &counterVec{name: name, help: help, labels: labels, series: map[string]*series{}}
}

// inc adds one to the series of these label values (one per label).
func (c *counterVec) inc(values ...string) {
	key := strings.Join(values, "\xff")
	c.mu.Lock()
	s, ok := c.series[key]
	if !ok {
		s = &series{values: values}
		c.series[key] = s
	}
	s.n++
	c.mu.Unlock()
}

func (c *counterVec) write(b *strings.Builder) {
	writeHeader(b, c.name, c.help, "counter")
	c.mu.Lock()
	lines := make([]string, 0, len(c.series))
	for _, s := range c.series {
		lines = append(lines, c.name+labelSet(c.labels, s.values)+" "+strconv.FormatUint(s.n, 10)+"\n")
	}
	c.mu.Unlock()
	sort.Strings(lines)
	for _, l := range lines {
		b.WriteString(l)
	}
}

// histogram is a histogram without labels.
type histogram struct {
	name, help string
	bounds     []float64 // upper bounds, ascending; +Inf is implied
	mu         sync.Mutex
	counts     []uint64 // per bucket, not cumulative; the last is +Inf
	sum        float64
	n          uint64
}

func newHistogram(name, help string, bounds ...float64) *histogram {
	return &histogram{name: name, help: help, bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v) // first bound >= v
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.n++
	h.mu.Unlock()
}

func (h *histogram) write(b *strings.Builder) {
	writeHeader(b, h.name, h.help, "histogram")
	h.mu.Lock()
	defer h.mu.Unlock()
	var cum uint64
	for i, c := range h.counts {
		cum += c
		le := "+Inf"
		if i < len(h.bounds) {
			le = formatFloat(h.bounds[i])
		}
		fmt.Fprintf(b, "%s_bucket{le=\"%s\"} %d\n", h.name, le, cum)
	}
	fmt.Fprintf(b, "%s_sum %s\n%s_count %d\n", h.name, formatFloat(h.sum), h.name, h.n)
}

func writeGauge(b *strings.Builder, name, help string, v float64) {
	writeHeader(b, name, help, "gauge")
	b.WriteString(name + " " + formatFloat(v) + "\n")
}

func writeHeader(b *strings.Builder, name, help, typ string) {
	help = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help)
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// labelSet renders {a="x",b="y"} with the label names sorted, as
// client_golang does.
func labelSet(names, values []string) string {
	type pair struct{ n, v string }
	ps := make([]pair, 0, len(names))
	for i, n := range names {
		ps = append(ps, pair{n, values[i]})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].n < ps[j].n })
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.n + `="` + esc.Replace(p.v) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// residentBytes reads this process's RSS from /proc (Linux only).
func residentBytes() (float64, bool) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return float64(pages) * float64(os.Getpagesize()), true
}

// knownEvents bounds the "event" label: event names come from a header, and
// only these are used verbatim.
var knownEvents = map[string]bool{
	ghPing: true, ghPullRequest: true, ghIssueComment: true, ghIssues: true, ghPush: true,
	glMergeRequest: true, glNote: true, glIssue: true, glPush: true, glTagPush: true,
}

func eventLabel(name string) string {
	switch {
	case name == "":
		return "none"
	case knownEvents[name]:
		return name
	}
	return "other"
}
