package main

import (
	"context"
	"os"
	"runtime"
	"sync"
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

// GOGC is MaxPercent while that keeps the growth under Headroom, then
// falls with the live heap, never under MinPercent.
func TestGCPacingPercent(t *testing.T) {
	p := &gcPacing{}
	p.setDefaults()
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 200},        // no collection yet
		{10 << 20, 200}, // ingest alone: 20 MiB of growth
		{32 << 20, 200}, // 64 MiB of growth, the bound
		{48 << 20, 133}, // 64 MiB of growth
		{64 << 20, 100}, // Go's default from here on
		{80 << 20, 100}, // a burst of runs: the NATS server's block caches
		{1 << 30, 100},  // never under MinPercent
	} {
		if got := p.percent(c.live); got != c.want {
			t.Errorf("live %d MiB: GOGC %d, want %d", c.live>>20, got, c.want)
		}
	}
	low := &gcPacing{MinPercent: 50}
	low.setDefaults()
	if got := low.percent(256 << 20); got != 50 {
		t.Errorf("MinPercent 50, live 256 MiB: GOGC %d, want 50", got)
	}
}

// After each collection the pacing reads the live heap and sets the GOGC
// for it, and only when it changes; it stops with its context.
func TestGCPacingFollowsLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "") // restores the environment afterwards
	os.Unsetenv("GOGC")
	var live atomic.Uint64
	var mu sync.Mutex
	var sets []int
	p := &gcPacing{
		set:  func(pc int) int { mu.Lock(); sets = append(sets, pc); mu.Unlock(); return 0 },
		live: live.Load,
	}
	last := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return sets[len(sets)-1], len(sets)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live.Store(10 << 20)
	p.start(ctx)
	if pc, n := last(); pc != 200 || n != 1 {
		t.Fatalf("at start: GOGC %d after %d sets, want 200 once", pc, n)
	}
	live.Store(80 << 20)
	waitFor(t, 10*time.Second, func() bool { runtime.GC(); pc, _ := last(); return pc == 100 })
	_, n := last()
	for range 3 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if pc, m := last(); pc != 100 || m != n {
		t.Fatalf("the same live heap set GOGC again: %v", sets)
	}
	live.Store(10 << 20)
	waitFor(t, 10*time.Second, func() bool { runtime.GC(); pc, _ := last(); return pc == 200 })
	cancel()
	// A cleanup already past its context check still reads 10 MiB: no set.
	runtime.GC()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	_, n = last()
	live.Store(80 << 20)
	for range 3 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if _, m := last(); m != n {
		t.Fatalf("pacing went on after its context ended: %v", sets)
	}
}

// GOGC set by the operator wins: the pacing sets nothing.
func TestGCPacingLeavesOperatorGOGC(t *testing.T) {
	t.Setenv("GOGC", "150")
	var calls atomic.Int64
	p := &gcPacing{set: func(int) int { calls.Add(1); return 0 }, live: func() uint64 { return 80 << 20 }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.start(ctx)
	for range 3 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != 0 {
		t.Fatalf("GOGC set by the operator: the pacing set GOGC %d times", n)
	}
}

// The real live-heap reading works in this process.
func TestHeapLiveAfterGC(t *testing.T) {
	sink = make([]byte, 4<<20)
	runtime.GC()
	if got := heapLive(); got < 4<<20 {
		t.Fatalf("live heap %d bytes with a 4 MiB buffer live", got)
	}
	runtime.KeepAlive(sink)
}

// Heap sampling is off unless GODEBUG asks for it.
func TestStopHeapSampling(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 512 << 10
	t.Setenv("GODEBUG", "gctrace=0")
	stopHeapSampling()
	if runtime.MemProfileRate != 0 {
		t.Fatalf("MemProfileRate = %d, want 0", runtime.MemProfileRate)
	}
	runtime.MemProfileRate = 4096
	t.Setenv("GODEBUG", "gctrace=0,memprofilerate=4096")
	stopHeapSampling()
	if runtime.MemProfileRate != 4096 {
		t.Fatalf("MemProfileRate = %d with GODEBUG memprofilerate=4096, want it kept", runtime.MemProfileRate)
	}
}
