package bench

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

func TestSummarizePercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 1000; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := summarize(ds)
	if l.P50 != 500 || l.P99 != 990 || l.P999 != 999 || l.Max != 1000 {
		t.Fatalf("percentiles wrong: %+v", l)
	}
}

func TestClosedLoopCountsEveryOpAndError(t *testing.T) {
	r := closedLoop(context.Background(), 4, 100, func(_ context.Context, i int) error {
		if i%10 == 0 {
			return errors.New("x")
		}
		return nil
	})
	if r.Ops != 100 || r.Errors != 10 {
		t.Fatalf("got %+v", r)
	}
}

func TestOpenLoopKeepsItsRate(t *testing.T) {
	r := openLoop(context.Background(), 200, 500*time.Millisecond, func(context.Context, int) error { return nil })
	if r.Ops != 100 {
		t.Fatalf("ops = %d, want 100", r.Ops)
	}
	if r.Elapsed < 450*time.Millisecond || r.Elapsed > 2*time.Second {
		t.Fatalf("elapsed %v: the loop did not keep its schedule", r.Elapsed)
	}
}

func TestRSSOfSelf(t *testing.T) {
	r, err := readRSS(os.Getpid())
	if err != nil || r.Total < 1<<20 {
		t.Fatalf("rss = %+v, %v", r, err)
	}
	// A test binary maps its own code: both parts are there and add up
	// to at most the total (kernel counters are per-CPU, not exact).
	if r.Anon <= 0 || r.File <= 0 || r.Anon+r.File+r.Shmem > r.Total+1<<20 {
		t.Fatalf("rss parts = %+v", r)
	}
}

func TestParseRSS(t *testing.T) {
	status := "Name:\thookrun\nVmPeak:\t 1300000 kB\nVmRSS:\t   43000 kB\nRssAnon:\t    9000 kB\nRssFile:\t   33900 kB\nRssShmem:\t     100 kB\nThreads:\t12\n"
	r, err := parseRSS(status)
	if err != nil {
		t.Fatal(err)
	}
	if want := (rss{Total: 43000 << 10, Anon: 9000 << 10, File: 33900 << 10, Shmem: 100 << 10}); r != want {
		t.Fatalf("parsed %+v, want %+v", r, want)
	}
	if _, err := parseRSS("Name:\thookrun\nRssAnon:\t9000 kB\n"); err == nil {
		t.Fatal("a status without VmRSS parsed")
	}
	if _, err := parseRSS("VmRSS:\tlots kB\n"); err == nil {
		t.Fatal("a malformed VmRSS parsed")
	}
}
