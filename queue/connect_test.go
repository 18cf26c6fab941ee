package queue

import (
	"net"
	"strings"
	"testing"
	"time"
)

// hookrun and its NATS cluster often start together (docker-compose): Open
// waits for a server that is not up yet instead of failing at once.
func TestOpenWaitsForServer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	type result struct {
		q   *Queue
		err error
	}
	done := make(chan result, 1)
	go func() {
		q, err := Open(testCtx(t, 30*time.Second), Config{URL: "nats://" + addr, Password: "wait-pw", SetupTimeout: 20 * time.Second, Logger: testLogger(t)})
		done <- result{q, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("Open returned before any server was up: %v", r.err)
	case <-time.After(700 * time.Millisecond):
	}
	openTest(t, Config{Listen: addr, Password: "wait-pw"})
	r := <-done
	if r.err != nil {
		t.Fatalf("Open after the server came up: %v", r.err)
	}
	defer r.q.Close()
	if err := r.q.Ready(testCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// With nobody ever answering, Open gives up at SetupTimeout and says so.
func TestOpenGivesUpAtSetupTimeout(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	_, err = Open(testCtx(t, 30*time.Second), Config{URL: "nats://" + addr, SetupTimeout: time.Second, Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "no servers available") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 10*time.Second {
		t.Fatalf("gave up after %v, want about the 1s setup timeout", d)
	}
}
