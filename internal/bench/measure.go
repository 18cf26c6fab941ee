package bench

import (
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Latencies summarizes a set of durations.
type Latencies struct {
	P50  Millis `json:"p50_ms"`
	P99  Millis `json:"p99_ms"`
	P999 Millis `json:"p999_ms"`
	Max  Millis `json:"max_ms"`
}

// Millis is a duration printed in milliseconds.
type Millis float64

func ms(d time.Duration) Millis { return Millis(float64(d) / float64(time.Millisecond)) }

// summarize sorts ds in place and returns its percentiles.
func summarize(ds []time.Duration) Latencies {
	if len(ds) == 0 {
		return Latencies{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(q float64) time.Duration {
		i := int(q*float64(len(ds))+0.5) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(ds) {
			i = len(ds) - 1
		}
		return ds[i]
	}
	return Latencies{P50: ms(at(0.50)), P99: ms(at(0.99)), P999: ms(at(0.999)), Max: ms(ds[len(ds)-1])}
}

// Result of a closed or open loop.
type loopResult struct {
	Ops       int
	Errors    int
	FirstErr  string // what the first failed op said, "" when none failed
	Elapsed   time.Duration
	Latencies Latencies
}

// firstError keeps the first error of a loop's ops.
type firstError struct {
	once sync.Once
	msg  string
}

func (f *firstError) note(err error) { f.once.Do(func() { f.msg = err.Error() }) }

func (r loopResult) perSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// closedLoop runs op from `concurrency` workers until n operations are done
// (n > 0) and records each one's latency.
func closedLoop(ctx context.Context, concurrency, n int, op func(ctx context.Context, i int) error) loopResult {
	var next, errs atomic.Int64
	var first firstError
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := op(ctx, i); err != nil {
					errs.Add(1)
					first.note(err)
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	return loopResult{Ops: n, Errors: int(errs.Load()), FirstErr: first.msg, Elapsed: time.Since(start), Latencies: summarize(lat)}
}

// openLoop starts op at a fixed rate for d, whatever the answers' latency
// (so a slow server shows up as latency, not as a lower send rate), and
// records each one's latency from its scheduled start.
func openLoop(ctx context.Context, rate int, d time.Duration, op func(ctx context.Context, i int) error) loopResult {
	n := int(float64(rate) * d.Seconds())
	lat := make([]time.Duration, n)
	var errs atomic.Int64
	var first firstError
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func(i int, due time.Time) {
			defer wg.Done()
			if err := op(ctx, i); err != nil {
				errs.Add(1)
				first.note(err)
			}
			lat[i] = time.Since(due)
		}(i, due)
	}
	wg.Wait()
	return loopResult{Ops: n, Errors: int(errs.Load()), FirstErr: first.msg, Elapsed: time.Since(start), Latencies: summarize(lat)}
}

// rssBytes reads the resident set size of pid from /proc.
func rssBytes(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, os.ErrNotExist
}
