package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// peerFigures are the figures of the comparison's table, each read from a
// PeerRow, in the order.
var peerFigures = []struct {
	name   string
	format string
	value  func(PeerRow) float64
}{
	{"CPU per delivery incl. the run (server + children), ms", "%.2f", func(r PeerRow) float64 { return float64(r.CPUPerDelivery) }},
	{"runs drained, %[1]d deliveries at concurrency 8, runs/s", "%.0f", func(r PeerRow) float64 { return r.DrainedPerSec }},
	{"deliveries/s at concurrency 1", "%.0f", func(r PeerRow) float64 { return r.SerialPerSec }},
	{"dispatch p50, request → command started, ms", "%.1f", func(r PeerRow) float64 { return float64(r.DispatchP50) }},
	{"dispatch p99, ms", "%.1f", func(r PeerRow) float64 { return float64(r.DispatchP99) }},
	{"accepted deliveries/s at concurrency 64", "%.0f", func(r PeerRow) float64 { return r.BurstPerSec }},
	{"p99 at concurrency 64, ms", "%.1f", func(r PeerRow) float64 { return float64(r.BurstP99) }},
}

// rounds pairs the rows of each round: hookrun's and webhook's.
func (r *PeerReport) rounds() [][2]*PeerRow {
	var out [][2]*PeerRow
	for i := range r.Rows {
		row := &r.Rows[i]
		for len(out) < row.Round {
			out = append(out, [2]*PeerRow{})
		}
		slot := 0
		if row.Server == PeerWebhook {
			slot = 1
		}
		out[row.Round-1][slot] = row
	}
	return out
}

// WriteTable prints the comparison for people: per figure, each round's
// value for hookrun and webhook and their ratio (hookrun / webhook), then
// the load average around each server's measurement.
func (r *PeerReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "hookrun serve vs adnanh/webhook (%s, %d CPUs, payload %d bytes, load avg %.2f → %.2f%s)\n",
		r.Machine.GoVersion, r.Machine.CPUs, r.Machine.PayloadSize, r.Machine.LoadStart, r.Machine.LoadEnd, quickNote(r.Quick))
	b.WriteString(r.Machine.scratchNote())
	fmt.Fprintf(&b, "values per round (round 1, round 2, ...); ratio = hookrun / webhook; dispatch over %d sequential deliveries, concurrency 1 over %d, 64 over %d\n\n",
		r.DispatchRuns, r.SerialOps, r.BurstOps)
	rounds := r.rounds()
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\thookrun\twebhook\tratio\t")
	for _, f := range peerFigures {
		var hs, ws, rs []string
		for _, pair := range rounds {
			h, wh := cell(f.format, pair[0], f.value), cell(f.format, pair[1], f.value)
			hs, ws = append(hs, h), append(ws, wh)
			ratio := "-"
			if pair[0] != nil && pair[1] != nil && f.value(*pair[1]) != 0 {
				ratio = fmt.Sprintf("%.2f", f.value(*pair[0])/f.value(*pair[1]))
			}
			rs = append(rs, ratio)
		}
		name := f.name
		if strings.Contains(name, "%[1]d") {
			name = fmt.Sprintf(name, r.DrainOps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", name, strings.Join(hs, ", "), strings.Join(ws, ", "), strings.Join(rs, ", "))
	}
	tw.Flush()
	fmt.Fprintln(&b, "\nload average (1 min) while each server ran:")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "  round %d %-8s %.2f → %.2f\n", row.Round, row.Server, row.LoadStart, row.LoadEnd)
	}
	fmt.Fprintf(&b, "\nbench peer took %.1fs\n", r.Elapsed)
	_, err := io.WriteString(w, b.String())
	return err
}

// cell formats one server's figure, "-" when it did not run.
func cell(format string, row *PeerRow, value func(PeerRow) float64) string {
	if row == nil {
		return "-"
	}
	return fmt.Sprintf(format, value(*row))
}
