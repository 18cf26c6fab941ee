package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a hookrun process started from the test binary.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startHookrun runs `hookrun args...` as a child process; it is stopped
// (SIGTERM, then SIGKILL) when the test ends, and its output is printed if
// the test failed.
func startHookrun(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	return startHookrunBinary(t, name, os.Args[0], nil, env, args...)
}

// startHookrunBinary is startHookrun with the test binary at bin, run as
// cred (nil: as the test).
func startHookrunBinary(t *testing.T, name, bin string, cred *syscall.Credential, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "HOOKRUN_AS_MAIN=1"), env...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &proc{t: t, name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(syscall.SIGTERM, 20*time.Second)
		if t.Failed() {
			t.Logf("--- output of %s ---\n%s", name, tail(out.String(), 6000))
			if dir := os.Getenv("HOOKRUN_TEST_LOGDIR"); dir != "" {
				// The whole output, for a failure the tail does not explain.
				f := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+".log")
				if err := os.WriteFile(f, []byte(out.String()), 0o644); err == nil {
					t.Logf("whole output of %s: %s", name, f)
				}
			}
		}
	})
	return p
}

// stop sends sig and waits up to grace, then kills the process group.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitReady(t *testing.T, p *proc, url string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready (%v):\n%s", p.name, p.cmd.ProcessState, tail(p.out.String(), 4000))
		default:
		}
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not ready within %v:\n%s", p.name, within, tail(p.out.String(), 4000))
}

func signGitHub(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

type hookAnswer struct {
	Delivery string `json:"delivery"`
	Runs     []struct {
		ID        string `json:"id"`
		Workflow  string `json:"workflow"`
		Duplicate bool   `json:"duplicate"`
	} `json:"runs"`
	Reason string `json:"reason"`
}

func postGitHub(t *testing.T, url, secret, event, delivery string, body []byte) (int, hookAnswer) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/hooks/github", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", signGitHub(secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, hookAnswer{}
	}
	defer resp.Body.Close()
	var a hookAnswer
	data, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(data, &a)
	return resp.StatusCode, a
}

// apiGet decodes GET url+path with the bearer token into v.
func apiGet(t *testing.T, url, token, path string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil && resp.StatusCode == 200 {
			t.Fatalf("GET %s: decoding %q: %v", path, data, err)
		}
	}
	return resp.StatusCode
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// touched is body (a GitHub pull_request delivery) as GitHub sends it for a
// later event about the same pull request: its updated_at n seconds into
// 2026. Ingress deduplicates by the forge's object, so one fixture sent
// as several events must differ as real events do.
func touched(t *testing.T, body []byte, n int) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m["pull_request"].(map[string]any)["updated_at"] = time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC).Format(time.RFC3339)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixture(t *testing.T, rel string) []byte {
	t.Helper()
	// The payload fixtures live with their forge's normalizer:
	// providers/<forge>/testdata/<forge>/...
	forge, _, _ := strings.Cut(rel, "/")
	data, err := os.ReadFile(filepath.Join("..", "..", "providers", forge, "testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func fmtSscan(s string, v *int64) (int, error) { return fmt.Sscan(s, v) }

// stepWritableDir returns a directory outside the test's own (which is
// private to root) that host steps, running as the unprivileged step user,
// can write: a marker file the test reads back lives here.
func stepWritableDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hookrun-steps-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}
