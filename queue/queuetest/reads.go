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
	subjects := make([]string, len(buckets))
	for i, b := range buckets {
		subjects[i] = "$JS.API.DIRECT.GET.KV_" + b + ".>"
	}
	count := Requests(t, q, subjects...)
	return func() map[string]int64 {
		n := count()
		got := make(map[string]int64, len(buckets))
		for i, b := range buckets {
			got[b] = n[i]
		}
		return got
	}
}

// Requests counts the messages published on each of subjects (JetStream
// API requests, say) that reach q's server from any client, from now on:
// count() returns, per subject in order, how many were sent before it was
// called.
func Requests(t testing.TB, q *queue.Queue, subjects ...string) (count func() []int64) {
	t.Helper()
	nc, err := q.Connect("count-requests")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	counts := make([]atomic.Int64, len(subjects))
	for i, s := range subjects {
		n := &counts[i]
		if _, err := nc.Subscribe(s, func(*nats.Msg) { n.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() []int64 {
		// The server passed each request on to nc when it received it: a
		// round trip of nc's comes back after them.
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		got := make([]int64, len(counts))
		for i := range counts {
			got[i] = counts[i].Load()
		}
		return got
	}
}
