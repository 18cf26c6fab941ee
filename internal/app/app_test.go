package app

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// order records the closing of named closers.
type order struct{ closed []string }

type namedCloser struct {
	name string
	o    *order
	err  error
}

func (c namedCloser) Close() error {
	c.o.closed = append(c.o.closed, c.name)
	return c.err
}

// Closers close in reverse order, all of them even when one fails, and
// report every failure.
func TestClosersCloseInReverse(t *testing.T) {
	var o order
	boom := errors.New("boom")
	cl := closers{namedCloser{"queue", &o, nil}, namedCloser{"docker", &o, boom}, namedCloser{"other", &o, nil}}
	if err := cl.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close = %v, want the failure", err)
	}
	if want := []string{"other", "docker", "queue"}; !slices.Equal(o.closed, want) {
		t.Fatalf("closed %v, want %v", o.closed, want)
	}
}

func TestStartChecksTheMode(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		m    Mode
		cfg  Config
		want string
	}{
		{"ingress without nats.url", ModeIngress, Config{AllowRepos: []string{"o/*"}}, "nats.url: required for `hookrun ingress`"},
		{"runner without nats.url", ModeRunner, Config{}, "nats.url: required for `hookrun runner`"},
		{"runner without a request key", ModeRunner, Config{NATS: NATSConfig{URL: "nats://127.0.0.1:1"}}, "runs.request_key: required"},
		{"ingress without a request key", ModeIngress, Config{NATS: NATSConfig{URL: "nats://127.0.0.1:1"}, AllowRepos: []string{"o/*"}}, "runs.request_key: required"},
		{"short request key", ModeServe, Config{AllowRepos: []string{"o/*"}, Runs: RunsConfig{RequestKey: "short"}}, "runs.request_key: must be at least 32 characters"},
		{"serve without allow_repos", ModeServe, Config{}, ErrAllowReposRequired.Error()},
		{"invalid", ModeServe, Config{AllowRepos: []string{"o/*"}, Runner: RunnerConfig{Concurrency: -1}}, "runner.concurrency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.DataDir = filepath.Join(dir, "data")
			a, err := Start(context.Background(), tc.m, &tc.cfg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start = %v, %v; want an error containing %q", a, err, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("a refused start created data_dir (%v)", err)
	}
}

// serve's stack in one process: data_dir private, ingress answering on its
// address with the workflows loaded, everything stopped by Shutdown (the
// queue closed, a second Shutdown harmless).
func TestStartServeAndShutdown(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "workflows")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wf, "hello.yaml"), []byte("name: hello\nsteps:\n  - {id: hi, run: 'true'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	on := true
	cfg := &Config{
		Listen: "127.0.0.1:0", DataDir: data, Workflows: wf, AllowRepos: []string{"o/*"},
		GitHub: GitHubConfig{Enabled: &on, WebhookSecret: "s"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := Start(ctx, ModeServe, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Runner.Concurrency != 0 {
		t.Errorf("Start filled the caller's config: %+v", cfg.Runner)
	}
	if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data_dir %v, %v; want 0700", fi.Mode(), err)
	}
	if n := len(a.Workflows().Workflows()); n != 1 {
		t.Errorf("%d workflows loaded, want 1", n)
	}
	resp, err := http.Get(a.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("readyz %d", resp.StatusCode)
	}
	// The runner's report outbox is on serve's /metrics.
	resp, err = http.Get(a.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), "hookrun_report_outbox_given_up_total 0") {
		t.Errorf("/metrics has no outbox metrics:\n%.2000s", metrics)
	}

	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if err := a.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := a.Queue().Ready(sctx); err == nil {
		t.Error("the queue is still ready after Shutdown")
	}
	if _, err := http.Get(a.URL() + "/healthz"); err == nil {
		t.Error("ingress still answers after Shutdown")
	}
	if err := a.Shutdown(sctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}
