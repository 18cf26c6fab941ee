package queue_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
)

// The embedded server listening on TCP, as `serve` with nats.listen: a
// client without credentials is refused (it could otherwise read the
// stored webhook bodies and queue runs); the generated credentials, kept
// in DataDir with mode 0600 and reused by the next start, let a client in.
// The log names the password file, never the password.
func TestEmbeddedListenRequiresAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := &syncBuffer{}
	cfg := queue.Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(logs, nil))}
	q := openTest(t, cfg)
	ctx := testCtx(t, 30*time.Second)
	if _, err := q.Publish(ctx, testRequest("secret-body")); err != nil {
		t.Fatal(err)
	}

	if nc, err := nats.Connect(q.ClientURL(), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a connection without credentials was accepted")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connecting without credentials: %v, want an authorization violation", err)
	}
	if nc, err := nats.Connect(q.ClientURL(), nats.UserInfo(queue.DefaultUser, "guess"), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a connection with a wrong password was accepted")
	}

	pwFile := filepath.Join(dir, queue.DefaultPasswordFileName)
	if q.PasswordFile() != pwFile {
		t.Fatalf("PasswordFile() = %q, want %q", q.PasswordFile(), pwFile)
	}
	info, err := os.Stat(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("password file mode %#o, want 0600", info.Mode().Perm())
	}
	raw, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	pw := strings.TrimSpace(string(raw))
	if len(pw) < 32 {
		t.Fatalf("generated password of %d characters", len(pw))
	}
	if user, got := q.ClientAuth(); user != queue.DefaultUser || got != pw {
		t.Fatalf("ClientAuth() = %q and a password equal to the file's: %v", user, got == pw)
	}

	// A raw nats.go client with the file's credentials reads JetStream.
	nc, err := nats.Connect(q.ClientURL(), nats.UserInfo(queue.DefaultUser, pw), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("connecting with the generated credentials: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("jetstream with the generated credentials: %v", err)
	}
	nc.Close()
	// So does hookrun's own client, as `hookrun runner` configured with
	// nats: {url, password_file}.
	remote := openTest(t, queue.Config{URL: q.ClientURL(), PasswordFile: pwFile})
	if err := remote.Ready(ctx); err != nil {
		t.Fatalf("a queue client with the password file: %v", err)
	}

	out := logs.String()
	if strings.Contains(out, pw) {
		t.Fatalf("the log holds the password:\n%s", out)
	}
	if !strings.Contains(out, "password_file: "+pwFile) || !strings.Contains(out, "url: "+q.ClientURL()) {
		t.Fatalf("the log does not say how a runner connects (url and password_file):\n%s", out)
	}

	// The next start reuses the file: the same password works.
	_ = remote.Close()
	_ = q.Close()
	q2 := openTest(t, cfg)
	again, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(raw) {
		t.Fatal("a restart replaced the password")
	}
	nc, err = nats.Connect(q2.ClientURL(), nats.UserInfo(queue.DefaultUser, pw), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("connecting after a restart with the first start's password: %v", err)
	}
	nc.Close()
	if nc, err := nats.Connect(q2.ClientURL(), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("after a restart, a connection without credentials was accepted")
	}
}

// nats.insecure_no_auth: the operator's explicit choice of an open port,
// warned about at every start; no password file is made.
func TestEmbeddedListenInsecureNoAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := &syncBuffer{}
	q := openTest(t, queue.Config{DataDir: dir, Listen: "127.0.0.1:0", InsecureNoAuth: true, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	nc, err := nats.Connect(q.ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("connecting without credentials to an insecure_no_auth server: %v", err)
	}
	nc.Close()
	if _, err := os.Stat(filepath.Join(dir, queue.DefaultPasswordFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("password file of an insecure server: %v", err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "WITHOUT AUTHENTICATION") {
		t.Fatalf("no warning at start:\n%s", logs.String())
	}
}

// An embedded server without a TCP port needs no credentials: the process
// talks to it in-process, and nothing is written.
func TestEmbeddedInProcessNeedsNoPassword(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	q := openTest(t, queue.Config{DataDir: dir})
	if err := q.Ready(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if user, pw := q.ClientAuth(); user != "" || pw != "" {
		t.Fatalf("ClientAuth() = %q, %q", user, pw)
	}
	if _, err := os.Stat(filepath.Join(dir, queue.DefaultPasswordFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("password file without a tcp port: %v", err)
	}
}

// Routes of an embedded cluster require the password too: the three nodes
// sharing one password file (created by whichever started first) form
// their cluster; a server that routes to a node without credentials never
// joins, one with them does.
func TestEmbeddedClusterRoutesRequireAuth(t *testing.T) {
	nodes, _ := startCluster(t)
	user, pw := nodes[0].ClientAuth()
	for i, n := range nodes {
		if u, p := n.ClientAuth(); pw == "" || u != user || p != pw {
			t.Fatalf("node %d requires other credentials than node 1 (or none)", i+1)
		}
	}
	route := nodes[0].Cfg().ClusterListen
	peer := func(name, routeURL string) *server.Server {
		host, port, err := queue.SplitHostPort(freeAddrs(t, 1)[0])
		if err != nil {
			t.Fatal(err)
		}
		s, err := server.NewServer(&server.Options{ServerName: name, Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "hookrun-test", Host: host, Port: port}, Routes: server.RoutesFromStr(routeURL)})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		t.Cleanup(s.Shutdown)
		return s
	}
	intruder := peer("intruder", "nats-route://"+route)
	member := peer("member", "nats-route://"+user+":"+pw+"@"+route)
	deadline := time.Now().Add(10 * time.Second)
	for member.NumRoutes() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a route with the password did not join")
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // the intruder retries every second
	if n := intruder.NumRoutes(); n != 0 {
		t.Fatalf("a route without credentials joined: %d routes", n)
	}
}
