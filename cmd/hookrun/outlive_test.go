package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNoStepOutlivesAKilledRunner is issue 16's ninth point end to end:
// `hookrun serve` is killed with SIGKILL in the middle of a host step whose
// shell left two children in the background, one of them after setsid;
// none of the step's processes keeps running (the kernel kills them with
// the step's PID namespace), and the restarted serve runs the run again to
// its end. In every mode host steps have: isolated (root), same_user as
// root (a PID namespace) and same_user as an unprivileged user (a user
// namespace around the PID namespace).
//
// The step's processes are found by a mark in their command lines, not by
// the PIDs they could write down: those are the PIDs of the step's own
// namespace, which mean other processes out here.
func TestNoStepOutlivesAKilledRunner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs hookrun as root and as another user: run it as root (CI does)")
	}
	for i, tt := range []struct {
		name, runner string
		nobody       bool
	}{
		{"isolated", "", false},
		{"same_user as root", "host_steps: same_user", false},
		{"same_user unprivileged", "host_steps: same_user", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const secret, apiToken = "outlive-secret", "outlive-api"
			// sleep takes a fraction: the mark is a number only this test's
			// processes carry.
			mark := fmt.Sprintf("30%d%d.5", i, time.Now().UnixNano()%1000000)
			dir := stepWritableDir(t)
			started := filepath.Join(dir, "started")
			writeFile(t, filepath.Join(dir, "workflows", "bg.yaml"), `name: bg
on:
  - event: pull_request
env:
  - STARTED: `+started+`
steps:
  - id: bg
    run: |
      if [ -e "$STARTED" ]; then echo "second attempt"; exit 0; fi
      sleep `+mark+` &
      setsid sh -c 'exec sleep `+mark+`' &
      sleep `+mark+` &
      echo "$$ $!" > "$STARTED"
      wait
report: { comment: none, status: false }
`)
			addr := freeAddr(t)
			cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["Codertocat/*"]
github: { webhook_secret: "`+secret+`" }
api: { token: "`+apiToken+`" }
shutdown_grace: 5s
runner: { ack_wait: 4s, heartbeat: 1s, `+tt.runner+` }
`)
			start := func(name string) *proc {
				if tt.nobody {
					for _, p := range []string{dir, filepath.Join(dir, "workflows"), filepath.Join(dir, "workflows", "bg.yaml"), cfg} {
						if err := os.Chown(p, 65534, 65534); err != nil {
							t.Fatal(err)
						}
					}
					return startHookrunAsNobody(t, name, nil, "serve", "--config", cfg, "--log-format", "json")
				}
				return startHookrun(t, name, nil, "serve", "--config", cfg, "--log-format", "json")
			}
			url := "http://" + addr
			p := start("serve")
			waitReady(t, p, url, 60*time.Second)
			code, ans := postGitHub(t, url, secret, "pull_request", "outlive-1", fixture(t, "github/pull_request/opened.payload.json"))
			if code != http.StatusAccepted || len(ans.Runs) != 1 {
				t.Fatalf("delivery: %d %+v", code, ans)
			}
			id := ans.Runs[0].ID
			// The step's shell and its three children (the setsid one once
			// it has exec'd sleep).
			waitFor(t, 60*time.Second, func() bool { return len(markedProcesses(mark)) >= 4 && fileExists(started) })

			// kill -9 of serve alone, not of its process group.
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-p.done
			deadline := time.Now().Add(10 * time.Second)
			for len(markedProcesses(mark)) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if left := markedProcesses(mark); len(left) > 0 {
				for _, pid := range left {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				t.Fatalf("processes %v of the step outlived the SIGKILL of serve", left)
			}

			// Back again: the run is taken up again and ends; nothing of the
			// first attempt came back meanwhile.
			p2 := start("serve again")
			waitReady(t, p2, url, 60*time.Second)
			var rec struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			}
			waitFor(t, 90*time.Second, func() bool {
				return apiGet(t, url, apiToken, "/api/v1/runs/"+id, &rec) == http.StatusOK && (rec.Status == "succeeded" || rec.Status == "failed")
			})
			if rec.Status != "succeeded" {
				t.Errorf("the run after the restart: %s (%s)", rec.Status, rec.Error)
			}
			if left := markedProcesses(mark); len(left) > 0 {
				t.Errorf("processes %v of the step run after the restart", left)
			}
		})
	}
}

// markedProcesses lists the live processes whose command line holds mark.
func markedProcesses(mark string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(mark)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			s := string(st)
			if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
