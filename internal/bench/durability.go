package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hookrun/hookrun/queue"
)

// durabilityConcurrency is the closed-loop concurrency the sync settings
// are compared at (the issue's threshold: "unless that halves ingest at
// concurrency 8").
const durabilityConcurrency = 8

// syncInterval is nats-server's own default, the setting compared with
// queue.SyncAlways.
const syncInterval = "2m"

// runDurability measures HTTP ingest with the embedded store syncing every
// two minutes (nats-server's default) and syncing before every
// acknowledgement (hookrun's default), alternating twice so that a drift
// of the machine's load hits both, each on a fresh data directory.
func runDurability(ctx context.Context, cfg *Config, dir string, rep *Report) error {
	d := Durability{Concurrency: durabilityConcurrency, Ops: cfg.IngestOps}
	var perSec = map[string][]float64{}
	var p99 = map[string][]Millis{}
	for round := range 2 {
		for _, sync := range []string{syncInterval, queue.DefaultSync, queue.SyncAlways} {
			if sync == syncInterval && round > 0 && queue.DefaultSync == syncInterval {
				continue
			}
			sub := filepath.Join(dir, fmt.Sprintf("sync-%s-%d", sync, round))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", sub, err)
			}
			c := benchConfig(sub)
			c.NATS.Sync = sync
			s, err := openStackWith(ctx, c, cfg.Logger, ingestMode, map[string]string{"bench-ingest.yaml": noopWorkflow("bench-ingest")})
			if err != nil {
				return err
			}
			snd := newSender(s.url)
			op := func(ctx context.Context, _ int) error { return snd.accept(ctx) }
			closedLoop(ctx, durabilityConcurrency, min(cfg.IngestOps, 200), op)
			r := closedLoop(ctx, durabilityConcurrency, cfg.IngestOps, op)
			snd.close()
			s.close()
			if r.Errors > 0 {
				return fmt.Errorf("sync %s: %d of %d deliveries were not accepted (first: %s)", sync, r.Errors, cfg.IngestOps, r.FirstErr)
			}
			perSec[sync] = append(perSec[sync], r.perSecond())
			p99[sync] = append(p99[sync], r.Latencies.P99)
		}
	}
	d.Default = queue.DefaultSync
	d.DefaultPerSec = mean(perSec[queue.DefaultSync])
	d.IntervalPerSec, d.AlwaysPerSec = mean(perSec[syncInterval]), mean(perSec[queue.SyncAlways])
	d.IntervalP99, d.AlwaysP99 = maxMillis(p99[syncInterval]), maxMillis(p99[queue.SyncAlways])
	if d.IntervalPerSec > 0 {
		d.Ratio = d.AlwaysPerSec / d.IntervalPerSec
	}
	rep.Durability = d
	fmt.Fprintf(cfg.Progress, "bench:   c=%d sync %s %.0f/s, sync %s (default) %.0f/s, sync always %.0f/s (%.2f)\n",
		durabilityConcurrency, syncInterval, d.IntervalPerSec, d.Default, d.DefaultPerSec, d.AlwaysPerSec, d.Ratio)
	return nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func maxMillis(xs []Millis) Millis {
	var m Millis
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
