// Package queuetest opens queues for tests: an embedded server in a fresh
// data directory (or a three-node cluster), quiet logs, the test request
// key, the deliveries of several runs, golden files. Test code only; it
// imports queue.
package queuetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
)

// RequestKey authenticates the run requests of every queue Open opens.
var RequestKey = []byte("queue-test-request-key-0123456789abcdef")

// Logger keeps test output quiet unless -v.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		w := &tWriter{t: t}
		t.Cleanup(func() { w.done.Store(true) }) // runs after the queues' cleanups
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// tWriter logs through t until the test is over (t.Log then panics).
type tWriter struct {
	t    testing.TB
	done atomic.Bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(string(p))
	}
	return len(p), nil
}

// Open opens an embedded queue in a fresh data dir (unless cfg has one or
// a URL), with Logger and RequestKey unless cfg has its own, and closes it
// at the end of the test.
func Open(t testing.TB, cfg queue.Config) *queue.Queue {
	t.Helper()
	if cfg.DataDir == "" && cfg.URL == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger(t)
	}
	if cfg.RequestKey == nil {
		cfg.RequestKey = RequestKey
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q, err := queue.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return q
}

// Ctx is a context that ends after d or with the test.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// DeliveryRequests is one delivery that matched n workflows: copies of
// base named multi-0, multi-1...
func DeliveryRequests(base *queue.RunRequest, n int) []*queue.RunRequest {
	reqs := make([]*queue.RunRequest, n)
	for i := range reqs {
		r := *base
		r.Workflow = fmt.Sprintf("multi-%d", i)
		reqs[i] = &r
	}
	return reqs
}

// Redeliver copies reqs as the forge's redelivery would arrive: fresh run ids.
func Redeliver(reqs []*queue.RunRequest) []*queue.RunRequest {
	out := make([]*queue.RunRequest, len(reqs))
	for i, r := range reqs {
		c := *r
		c.ID = ""
		out[i] = &c
	}
	return out
}

// BigBody is a valid JSON document of exactly n bytes.
func BigBody(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("w", n-2) + `"`)
}

// FreeAddrs returns n loopback addresses that were free a moment ago.
func FreeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return out
}

// StartCluster starts three embedded nodes with routes to each other (at
// R3) and returns them with their client URLs. They share one password
// file, which the first of them to start creates; clients find it at any
// node's PasswordFile. An address FreeAddrs found free can be taken by
// another process before a node binds it (the packages' tests run at
// once): a failed start is retried on fresh addresses, at most 3 times.
func StartCluster(t testing.TB) ([]*queue.Queue, string) {
	t.Helper()
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var nodes []*queue.Queue
		var urls string
		if nodes, urls, err = startCluster(t); err == nil {
			for _, n := range nodes {
				t.Cleanup(func() { _ = n.Close() })
			}
			return nodes, urls
		}
		t.Logf("starting cluster, attempt %d: %v", attempt, err)
	}
	t.Fatal(err)
	return nil, ""
}

func startCluster(t testing.TB) ([]*queue.Queue, string, error) {
	clientAddrs, routeAddrs := FreeAddrs(t, 3), FreeAddrs(t, 3)
	pwFile := filepath.Join(t.TempDir(), "cluster.password")
	nodes := make([]*queue.Queue, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		var routes []string
		for j, a := range routeAddrs {
			if j != i {
				routes = append(routes, "nats-route://"+a)
			}
		}
		cfg := queue.Config{
			DataDir: t.TempDir(), Listen: clientAddrs[i],
			ServerName: fmt.Sprintf("n%d", i+1), ClusterName: "hookrun-test",
			ClusterListen: routeAddrs[i], Routes: routes, Replicas: 3,
			PasswordFile: pwFile, Logger: Logger(t), RequestKey: RequestKey,
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			nodes[i], errs[i] = queue.Open(ctx, cfg) // all at once: setup needs a quorum
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, n := range nodes {
			if n != nil {
				_ = n.Close()
			}
		}
		return nil, "", err
	}
	var urls []string
	for _, a := range clientAddrs {
		urls = append(urls, "nats://"+a)
	}
	return nodes, strings.Join(urls, ","), nil
}

// Golden compares got with testdata/name, or rewrites it with -update
// (a flag the calling test package defines: a test binary may define
// its own).
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from golden file:\n%s", name, got)
	}
}

// FixedTime is the time of the golden files.
var FixedTime = time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC)
