package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/internal/app"
)

// TestServeNATSListenRequiresPassword: `hookrun serve` with nats.listen,
// the documented way to add runners, refuses a NATS client without
// credentials (a host step on the machine could otherwise read the stored
// webhook bodies and queue runs) and a `hookrun runner` configured without
// them; it logs the configuration line a runner needs, naming the password
// file and never the password, and a runner with exactly that line starts.
func TestServeNATSListenRequiresPassword(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "e2e.yaml"), e2eWorkflow)
	httpAddr, natsAddr := freeAddr(t), freeAddr(t)
	cfgFor := func(listen, nats string) string {
		return writeFile(t, filepath.Join(dir, "cfg-"+strings.ReplaceAll(listen, ":", "-")+".yaml"), `
listen: `+listen+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["Codertocat/*"]
github: { webhook_secret: "natsauth-secret" }
shutdown_grace: 2s
`+nats+`
`)
	}
	serveData := filepath.Join(dir, "serve")
	srv := startHookrun(t, "serve", nil, "serve", "--config", cfgFor(httpAddr, "nats: { listen: \""+natsAddr+"\" }"),
		"--data-dir", serveData, "--log-format", "json")
	waitReady(t, srv, "http://"+httpAddr, 60*time.Second)

	pwFile := filepath.Join(serveData, "nats", "client.password")
	raw, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatalf("serve wrote no password file: %v", err)
	}
	pw := strings.TrimSpace(string(raw))
	if info, _ := os.Stat(pwFile); info.Mode().Perm() != 0o600 {
		t.Fatalf("password file mode %#o, want 0600", info.Mode().Perm())
	}
	out := srv.out.String()
	if strings.Contains(out, pw) {
		t.Fatalf("serve logged the NATS password:\n%s", out)
	}
	m := regexp.MustCompile(`"runner_config":"(nats: \{[^"]*\})"`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("serve does not log how a runner connects:\n%s", tail(out, 4000))
	}
	runnerNATS := m[1]
	if want := "password_file: " + pwFile; !strings.Contains(runnerNATS, want) || !strings.Contains(runnerNATS, "nats://"+natsAddr) {
		t.Fatalf("runner_config %q lacks %q or the url", runnerNATS, want)
	}

	// A client without credentials, as the forged-run experiment was.
	if nc, err := nats.Connect("nats://"+natsAddr, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("nats.listen accepted a client without credentials")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("connecting without credentials: %v, want an authorization violation", err)
	}

	// Runners share serve's request key (the file it logs), so only the
	// NATS password differs between the two below.
	runs := "\nruns: { request_key_file: \"" + filepath.Join(serveData, app.RequestKeyFile) + "\" }"

	// A runner without the password does not start.
	bare := startHookrun(t, "runner-bare", nil, "runner", "--config", cfgFor(freeAddr(t), "nats: { url: \"nats://"+natsAddr+"\" }"+runs),
		"--data-dir", filepath.Join(dir, "runner-bare"), "--log-format", "json")
	select {
	case <-bare.done:
		if !strings.Contains(strings.ToLower(bare.out.String()), "authorization violation") {
			t.Fatalf("runner without credentials exited, but not for authorization:\n%s", tail(bare.out.String(), 4000))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("a runner without credentials is still running:\n%s", tail(bare.out.String(), 4000))
	}

	// A runner with the logged configuration line connects: its metrics
	// listener starts only after the queue opened.
	metrics := freeAddr(t)
	runner := startHookrun(t, "runner", nil, "runner", "--config",
		cfgFor(freeAddr(t), runnerNATS+runs+"\nrunner: { metrics_listen: \""+metrics+"\" }"),
		"--data-dir", filepath.Join(dir, "runner"), "--log-format", "json")
	waitFor(t, 60*time.Second, func() bool {
		select {
		case <-runner.done:
			t.Fatalf("the runner with serve's runner_config exited:\n%s", tail(runner.out.String(), 4000))
		default:
		}
		resp, err := http.Get("http://" + metrics + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	runner.stop(syscall.SIGTERM, 10*time.Second)
}
