package bench

import (
	"context"
	"errors"
	"fmt"
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

// rss is a process's resident set from /proc/PID/status: VmRSS and its
// parts. File is the mapped pages of files, for `hookrun serve` its own
// binary's code and read-only data: clean, shared with every process
// running the same binary and reclaimable, unlike Anon (heap, stacks, the
// runtime's metadata), which only the process can give back.
type rss struct {
	Total, Anon, File, Shmem int64 // bytes
}

// readRSS reads the resident set of pid.
func readRSS(pid int) (rss, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return rss{}, err
	}
	return parseRSS(string(data))
}

// parseRSS reads the VmRSS, RssAnon, RssFile and RssShmem lines of a
// /proc/PID/status text; VmRSS is required.
func parseRSS(status string) (rss, error) {
	var r rss
	fields := map[string]*int64{"VmRSS:": &r.Total, "RssAnon:": &r.Anon, "RssFile:": &r.File, "RssShmem:": &r.Shmem}
	seen := false
	for _, line := range strings.Split(status, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		dst, ok := fields[f[0]]
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return rss{}, fmt.Errorf("parsing %s: %w", f[0], err)
		}
		*dst = kb * 1024
		seen = seen || f[0] == "VmRSS:"
	}
	if !seen {
		return rss{}, errors.New("parsing /proc status: no VmRSS line")
	}
	return r, nil
}
