package main

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
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

// stopHeapSampling turns off the runtime's sampling of heap allocations
// (runtime.MemProfileRate), unless GODEBUG sets memprofilerate.
//
// By default the runtime records one allocation per 512 KiB with its
// stack, in a hash table of 1.4 MiB that it maps on the first sample and
// touches a page of at each new stack: `hookrun serve` came to 1.8 MiB of
// it after 10,000 runs (docs/performance.md). No command writes or serves
// a heap profile, so nothing ever read those records.
func stopHeapSampling() {
	if strings.Contains(os.Getenv("GODEBUG"), "memprofilerate=") {
		return
	}
	runtime.MemProfileRate = 0
}

// heapAllocated is the bytes allocated on the heap since the process started.
func heapAllocated() uint64 { return readBytes("/gc/heap/allocs:bytes") }

// readBytes reads one runtime/metrics counter of bytes, 0 if the runtime
// does not have it.
func readBytes(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// gcPacing sets the collector's GOGC in the long-running modes (serve,
// ingress, runner) and in the bench, which measures them in its own
// process, from the live heap after each collection.
//
// Ingest allocates about 100 KB per delivery (most of it the NATS server's
// copies of the 28 KB message), and GOGC 200 costs about a tenth less CPU
// per delivery than Go's default of 100 (docs/performance.md). But the heap
// a collector lets grow is GOGC percent of the live heap, and under load
// the live heap of `serve` is mostly the embedded NATS server's
// message-block caches (4 MiB buffers, kept 10 s after their last read):
// 80 MiB live made 200 a 240 MiB heap, whose spans the burst's surviving
// small objects were spread over, so RSS stayed high after the release.
// So GOGC is MaxPercent only while that keeps the growth under Headroom,
// and falls to MinPercent as the live heap grows: the embedded server's
// caches get Go's default, a process holding only hookrun's own heap
// (ingress, runner against a cluster) should keep 200.
type gcPacing struct {
	// MaxPercent is GOGC while the live heap is under Headroom /
	// MaxPercent * 100. Default 200.
	MaxPercent int
	// MinPercent is the lowest GOGC it sets, whatever the live heap.
	// Default 100, Go's own.
	MinPercent int
	// Headroom is the most heap growth above the live heap that
	// MaxPercent may give. Default 64 MiB.
	Headroom uint64
	// set applies a GOGC; default debug.SetGCPercent. Tests replace it.
	set func(int) int
	// live reads the live heap of the last collection; default
	// runtime/metrics. Tests replace it.
	live func() uint64
}

func (p *gcPacing) setDefaults() {
	if p.MaxPercent <= 0 {
		p.MaxPercent = 200
	}
	if p.MinPercent <= 0 {
		p.MinPercent = 100
	}
	if p.Headroom == 0 {
		p.Headroom = 64 << 20
	}
	if p.set == nil {
		p.set = debug.SetGCPercent
	}
	if p.live == nil {
		p.live = heapLive
	}
}

// percent is the GOGC for a live heap of live bytes.
func (p *gcPacing) percent(live uint64) int {
	if live == 0 {
		return p.MaxPercent
	}
	pc := p.Headroom * 100 / live
	return int(max(min(pc, uint64(p.MaxPercent)), uint64(p.MinPercent)))
}

// start applies MaxPercent, then re-paces after every collection until ctx
// ends. With GOGC in the environment it does nothing: the operator's
// setting wins.
func (p *gcPacing) start(ctx context.Context) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	p.setDefaults()
	var cur atomic.Int64 // the GOGC set last
	cur.Store(int64(p.MaxPercent))
	p.set(p.MaxPercent)
	var arm func()
	arm = func() {
		// The sentinel becomes garbage at once; its cleanup runs after the
		// collection that finds it, re-paces and arms the next one.
		runtime.AddCleanup(&gcSentinel{next: new(int)}, func(struct{}) {
			if ctx.Err() != nil {
				return
			}
			if pc := p.percent(p.live()); int64(pc) != cur.Load() {
				cur.Store(int64(pc))
				p.set(pc)
			}
			arm()
		}, struct{}{})
	}
	arm()
}

// gcSentinel has a pointer so that it is not a tiny allocation, which
// would share its memory (and its lifetime) with other objects.
type gcSentinel struct{ next *int }

// heapLive is the live heap marked by the last collection.
func heapLive() uint64 { return readBytes("/gc/heap/live:bytes") }
