package queuetest

import (
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/queue"
)

// DirectGets counts the direct gets of each of buckets' keys that reach
// q's server from any client, from now on: reads() returns, per bucket,
// how many were sent before it was called.
func DirectGets(t testing.TB, q *queue.Queue, buckets ...string) (reads func() map[string]int64) {
	t.Helper()
	nc, err := q.Connect("count-reads")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	counts := make(map[string]*atomic.Int64, len(buckets))
	for _, b := range buckets {
		n := new(atomic.Int64)
		counts[b] = n
		if _, err := nc.Subscribe("$JS.API.DIRECT.GET.KV_"+b+".>", func(*nats.Msg) { n.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() map[string]int64 {
		// The server passed each read on to nc when it received it: a
		// round trip of nc's comes back after them.
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		got := make(map[string]int64, len(counts))
		for b, n := range counts {
			got[b] = n.Load()
		}
		return got
	}
}
