package main

import (
	"context"
	"os"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// Start-up, then a burst of allocation, then quiet: one release after
// Quiet each time, none while busy, none again while it stays quiet, one more after the next burst.
func TestIdleReleaseAfterBurst(t *testing.T) {
	var alloc, released atomic.Uint64
	r := &idleRelease{
		Interval:   5 * time.Millisecond,
		Quiet:      50 * time.Millisecond,
		QuietBytes: 100,
		release:    func() { released.Add(1) },
		allocated:  alloc.Load,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.run(ctx)

	// Starting up is work: the first quiet spell releases it.
	waitFor(t, 5*time.Second, func() bool { return released.Load() == 1 })
	time.Sleep(150 * time.Millisecond)
	if n := released.Load(); n != 1 {
		t.Fatalf("released %d times in one quiet spell", n)
	}
	released.Store(0)
	busyUntil := time.Now().Add(150 * time.Millisecond)
	for time.Now().Before(busyUntil) { // busy: well over QuietBytes per interval
		alloc.Add(10_000)
		time.Sleep(time.Millisecond)
	}
	if n := released.Load(); n != 0 {
		t.Fatalf("released %d times while busy", n)
	}
	waitFor(t, 5*time.Second, func() bool { return released.Load() == 1 })
	time.Sleep(200 * time.Millisecond)
	if n := released.Load(); n != 1 {
		t.Fatalf("released %d times; want once per quiet spell", n)
	}
	alloc.Add(1_000_000)
	waitFor(t, 5*time.Second, func() bool { return released.Load() == 2 })
}

// The real release and allocation counter work in this process.
func TestHeapAllocatedGrows(t *testing.T) {
	before := heapAllocated()
	sink = make([]byte, 1<<20)
	if after := heapAllocated(); after < before+1<<20 {
		t.Fatalf("allocation counter went from %d to %d after a 1 MiB allocation", before, after)
	}
}

var sink []byte

// GOGC set by the operator wins over serverGCPercent.
func TestTuneGCRespectsGOGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	t.Setenv("GOGC", "150")
	tuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set: gc percent became %d, want it left at 100", got)
	}
	os.Unsetenv("GOGC")
	tuneGC()
	if got := debug.SetGCPercent(100); got != serverGCPercent {
		t.Fatalf("GOGC unset: gc percent %d, want %d", got, serverGCPercent)
	}
}
