package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// idleRelease hands the heap a burst of work left behind back to the
// operating system once the process has gone quiet.
//
// Go returns freed heap to the OS slowly, and an idle process runs no GC
// that would find the garbage in the first place: after a few thousand
// runs `hookrun serve` kept three times its idle RSS for minutes
// (docs/performance.md). Quiet is measured, not wired in: allocation below
// QuietBytes per Interval, for Quiet in a row, after at least one busy
// interval since the last release (or since the start).
type idleRelease struct {
	// Interval is how often the allocation counter is read. Default 2s.
	Interval time.Duration
	// Quiet is how long allocation must stay low before the release; it
	// outlasts the embedded NATS server's 10 s message-cache expiry so
	// that the caches are garbage by then. Default 15s.
	Quiet time.Duration
	// QuietBytes is the allocation per Interval that still counts as
	// quiet (timers, heartbeats, health checks). Default 4 MiB.
	QuietBytes uint64
	// release frees memory; default releaseMemory. Tests replace it.
	release func()
	// allocated reads the cumulative heap allocation; default
	// runtime/metrics. Tests replace it.
	allocated func() uint64
}

func (r *idleRelease) setDefaults() {
	if r.Interval <= 0 {
		r.Interval = 2 * time.Second
	}
	if r.Quiet <= 0 {
		r.Quiet = 15 * time.Second
	}
	if r.QuietBytes == 0 {
		r.QuietBytes = 4 << 20
	}
	if r.release == nil {
		r.release = releaseMemory
	}
	if r.allocated == nil {
		r.allocated = heapAllocated
	}
}

// run watches until ctx ends.
func (r *idleRelease) run(ctx context.Context) {
	r.setDefaults()
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	last := r.allocated()
	// Allocated more than QuietBytes in an interval since the last
	// release; starting up counts as work.
	busy := true
	var quietFor time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := r.allocated()
		delta := now - last
		last = now
		if delta > r.QuietBytes {
			busy, quietFor = true, 0
			continue
		}
		quietFor += r.Interval
		if busy && quietFor >= r.Quiet {
			r.release()
			busy = false
			last = r.allocated() // the release's own allocation is not work
		}
	}
}

// releaseMemory collects twice, so that what sat in sync.Pools (the NATS
// server's message-block buffers, up to 8 MiB each) and survived the first
// collection in the pools' victim cache is garbage too, then returns the
// free heap to the OS.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// heapAllocated is the bytes allocated on the heap since the process started.
func heapAllocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// serverGCPercent is the GOGC of the long-running modes (serve, ingress,
// runner), and of the bench, which measures them in its own process.
// Ingest allocates about 100 KB per delivery (most of it the NATS server's
// copies of the 28 KB message) against a live heap of 10 to 30 MiB, so the
// default of 100 collected several times a second under load; 200 gave
// about 12 % more deliveries per second here for a higher peak heap, which
// idleRelease hands back once the load is gone.
const serverGCPercent = 200

// tuneGC applies serverGCPercent unless the operator set GOGC.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serverGCPercent)
	}
}
