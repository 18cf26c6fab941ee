package queue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
)

// testLargeBodies publishes deliveries of two runs with 1, 5 and 25 MiB
// bodies (ingress's cap) and checks that each run reaches the handler with
// its body whole, that a body is stored once per delivery, and that no run
// message comes near a plain nats-server's 1 MiB max_payload.
func testLargeBodies(t *testing.T, pub, run *testQueue) {
	ctx := testCtx(t, 120*time.Second)
	type got struct {
		id  string
		raw []byte
	}
	gotCh := make(chan got, 16)
	c, err := run.Consume(ctx, queue.ConsumerConfig{AckWait: 10 * time.Second, FetchWait: 200 * time.Millisecond}, func(ctx context.Context, d *queue.Delivery) error {
		gotCh <- got{d.Request.ID, d.Request.Event.Raw}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })

	for i, mib := range []int{1, 5, 25} {
		body := bigBody(mib << 20)
		reqs := deliveryRequests(2)
		for _, r := range reqs {
			r.Event.Raw = body
		}
		began := time.Now()
		res, err := pub.PublishDelivery(ctx, reqs)
		if err != nil {
			t.Fatalf("%d MiB: %v", mib, err)
		}
		t.Logf("%d MiB body: delivery of 2 runs persisted in %s", mib, time.Since(began))
		want := map[string]bool{res[0].RunID: true, res[1].RunID: true}
		for range 2 {
			select {
			case g := <-gotCh:
				if !want[g.id] {
					t.Fatalf("%d MiB: handler got run %s, want one of %v", mib, g.id, want)
				}
				delete(want, g.id)
				if !bytes.Equal(g.raw, body) {
					t.Fatalf("%d MiB: run %s got a body of %d bytes, want the %d sent", mib, g.id, len(g.raw), len(body))
				}
			case <-ctx.Done():
				t.Fatalf("%d MiB: runs %v never reached the handler", mib, want)
			}
		}
		objs, err := pub.Bodies().List(ctx)
		if err != nil || len(objs) != i+1 {
			t.Fatalf("%d MiB: %d stored bodies (%v); want one per delivery, %d", mib, len(objs), err, i+1)
		}
	}
	st, err := pub.Bodies().Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != pub.Cfg().BodyTTL || pub.Cfg().BodyTTL != pub.Cfg().DeliveryTTL {
		t.Errorf("bodies kept for %s (BodyTTL %s); want the delivery TTL %s", st.TTL(), pub.Cfg().BodyTTL, pub.Cfg().DeliveryTTL)
	}
}

// Large bodies on the embedded server.
func TestLargeBodiesEmbedded(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{PublishTimeout: 30 * time.Second})
	testLargeBodies(t, q, q)
}

// Large bodies on a three-node cluster of real nats-server processes with
// the compose topology's configuration (deploy/nats.conf: nats-server's
// default max_payload of 1 MiB), streams at R3.
func TestLargeBodiesCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts nats-server processes")
	}
	t.Parallel()
	urls := startNATSServers(t)
	cfg := queue.Config{URL: urls, Password: composeNATSPassword, Replicas: 3, PublishTimeout: 30 * time.Second, SetupTimeout: 60 * time.Second}
	pub := openTest(t, cfg)
	if mp := pub.NC().MaxPayload(); mp != 1<<20 {
		t.Fatalf("server max_payload %d; want nats-server's default 1 MiB", mp)
	}
	testLargeBodies(t, pub, openTest(t, cfg))
}

// composeNATSPassword is the HOOKRUN_NATS_PASSWORD of the servers
// startNATSServers starts: clients present it as user DefaultUser.
const composeNATSPassword = "b0d1e5c0ffee"

// startNATSServers builds nats-server from the module's own version and
// starts three routed processes on loopback with deploy/nats.conf, each
// with its store in a temp dir; it returns their client URLs.
func startNATSServers(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nats-server: %v\n%s", err, out)
	}
	clients, routes := freeAddrs(t, 3), freeAddrs(t, 3)
	var routeURLs, clientURLs []string
	// deploy/nats.conf requires a password of clients (from the
	// environment); routes present theirs as docker-compose.yml does.
	const routeAuth = "route:" + composeNATSPassword + "@"
	for i := range 3 {
		routeURLs = append(routeURLs, "nats://"+routeAuth+routes[i])
		clientURLs = append(clientURLs, "nats://"+clients[i])
	}
	for i := range 3 {
		host, port, _ := strings.Cut(clients[i], ":")
		cmd := exec.Command(bin, "-c", "../deploy/nats.conf", "-sd", t.TempDir(), "-n", fmt.Sprintf("n%d", i+1),
			"-a", host, "-p", port, "--cluster_name", "hookrun-test", "--cluster", "nats://"+routeAuth+routes[i],
			"--routes", strings.Join(routeURLs, ","))
		cmd.Env = append(os.Environ(), "HOOKRUN_NATS_PASSWORD="+composeNATSPassword)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("nats-server n%d:\n%s", i+1, out.String())
			}
		})
	}
	return strings.Join(clientURLs, ",")
}

// syncBuffer is a bytes.Buffer safe for a process's two output streams.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A run whose body expired (or was removed) before a runner took it fails
// saying so, instead of running without its event.
func TestBodyGoneFailsRun(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	req := testRequest("bodygone")
	req.Event.Raw = bigBody(q.InlineMax() + 1)
	res, err := q.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := q.Bodies().List(ctx)
	if err != nil || len(objs) != 1 {
		t.Fatalf("%d bodies (%v); want 1", len(objs), err)
	}
	if err := q.Bodies().Delete(ctx, objs[0].Name); err != nil {
		t.Fatal(err)
	}
	called := make(chan struct{}, 1)
	// AckWait well above what a loaded machine takes to reach the body
	// (the nak's backoff, not AckWait, spaces the deliveries): a delivery
	// still on its way to the body when AckWait ends would end the run
	// through the max-deliveries advisory, "no runner finished it".
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: 10 * time.Second, FetchWait: 100 * time.Millisecond,
		MaxDeliver: 2, Backoff: []time.Duration{100 * time.Millisecond}}, func(ctx context.Context, d *queue.Delivery) error {
		called <- struct{}{}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	for {
		rec, _, err := q.Runs().Get(ctx, res.RunID)
		if err == nil && rec.Status.Terminal() {
			if !strings.Contains(rec.Error, "webhook body") || !strings.Contains(rec.Error, "it is gone") {
				t.Fatalf("run ended %s with %q; want the missing body named", rec.Status, rec.Error)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("run never failed: %+v %v", rec, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-called:
		t.Fatal("the handler ran a run without its body")
	default:
	}
	if _, err := q.Bodies().GetInfo(ctx, objs[0].Name); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("body: %v", err)
	}
}
