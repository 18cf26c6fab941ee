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
	n, err := rssBytes(os.Getpid())
	if err != nil || n < 1<<20 {
		t.Fatalf("rss = %d, %v", n, err)
	}
}
