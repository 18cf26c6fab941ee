package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/providers/git"
)

// trustProbes is a host step that tries every read a hostile pull request
// would try against the runner and prints, per probe, "denied NAME" or
// "LEAK NAME: what it read". HOOKRUN_PID is the serve process's pid,
// STEP_PARENT the step's parent (an isolated step's init).
const trustProbes = `set +e
export STEP_PARENT=$PPID
probe() {
  name=$1; shift
  out=$(sh -c "$1" 2>/dev/null)
  if [ -n "$out" ]; then printf 'LEAK %s: %s\n' "$name" "$out"; else echo "denied $name"; fi
}
probe parent-environ 'tr "\0" "\n" </proc/$STEP_PARENT/environ'
probe hookrun-environ 'tr "\0" "\n" </proc/$HOOKRUN_PID/environ'
probe hookrun-maps 'cat /proc/$HOOKRUN_PID/maps'
probe hookrun-mem 'head -c 64 /proc/$HOOKRUN_PID/mem | od -An -c'
probe any-environ 'cat /proc/[0-9]*/environ | tr "\0" "\n" | grep -e TOKEN -e SECRET'
probe own-environ 'env | grep -e ghp_ -e webhook-secret -e api-token'
probe config-file 'cat $CONFIG_FILE'
probe data-dir 'ls -A $DATA_DIR | grep -v -x -e workspaces -e scratch'
probe nats-store 'find $DATA_DIR/nats -type f | head -3; cat $DATA_DIR/nats/jetstream/*/streams/*/msgs/*.blk'
probe mirrors 'ls -A $DATA_DIR/mirrors'
probe other-runs 'find $DATA_DIR/workspaces -mindepth 1 -maxdepth 2 | grep -v -x -e "$(dirname "$HOOKRUN_WORKSPACE")" -e "$HOOKRUN_WORKSPACE"'
probe other-run-file 'cat $DATA_DIR/workspaces/$OTHER_SHARD/01OTHERRUNXXXXXXXXXXXXXXXX/secret.txt'
probe other-run-file-flat 'cat $DATA_DIR/workspaces/01OTHERRUNXXXXXXXXXXXXXXXX/secret.txt'
probe other-scratch 'find $DATA_DIR/scratch -mindepth 1 -maxdepth 2 | grep -v -x -e "$(dirname "$HOME")" | grep -v -e "/$HOOKRUN_RUN_ID+[a-z.]*\$"'
probe other-home 'cat $DATA_DIR/scratch/$OTHER_SHARD/01OTHERRUNXXXXXXXXXXXXXXXX+home/.netrc'
probe other-event 'cat $DATA_DIR/scratch/$OTHER_SHARD/01OTHERRUNXXXXXXXXXXXXXXXX+event.json'
probe other-home-flat 'cat $DATA_DIR/scratch/01OTHERRUNXXXXXXXXXXXXXXXX+home/.netrc'
probe other-home-legacy 'cat $DATA_DIR/scratch/01OTHERRUNXXXXXXXXXXXXXXXX/home/.netrc'
echo "uid=$(id -u) home=$HOME tmp=$TMPDIR"
touch "$HOME/h" "$TMPDIR/t" "$HOOKRUN_WORKSPACE/w" && echo "own dirs writable"
grep -q '"pull_request"' "$HOOKRUN_EVENT_PATH" && ! touch "$HOOKRUN_EVENT_PATH" 2>/dev/null && echo "own event file readable, not writable: $HOOKRUN_EVENT_PATH"
`

// TestHostStepsCannotReachHookrunsCredentials is issue 13's first point end
// to end: `hookrun serve`, run as root (as CI does), with its forge token in
// its environment and secrets in its configuration file, runs a host step
// that tries to read hookrun's environment and memory, the configuration
// file, data_dir (the NATS store, the mirrors, another run's workspace):
// every read is denied, the step runs as the unprivileged step user with
// its own HOME and TMPDIR, and the token appears nowhere in the step's
// logs, the API, the comment or hookrun's own log.
func TestHostStepsCannotReachHookrunsCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test checks what host steps of a root hookrun can reach: run it as root (CI does)")
	}
	const (
		ghToken  = "ghp_trust-boundary-token-0123456789"
		secret   = "trust-webhook-secret-in-config"
		apiToken = "trust-api-token-in-config"
	)
	gh, ghSrv := newFakeGitHub(t, ghToken)
	gh.context = "hookrun/trust"
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	const otherRun = "01OTHERRUNXXXXXXXXXXXXXXXX"
	otherShard := git.RunShard(otherRun)
	writeFile(t, filepath.Join(data, "workspaces", otherShard, otherRun, "secret.txt"), "another run's secret")
	writeFile(t, filepath.Join(data, "mirrors", "github", "Codertocat%2FPrivate.git", "config"), "[core]\n")
	writeFile(t, filepath.Join(data, "scratch", otherShard, otherRun+"+home", ".netrc"), "machine github.com password another-runs-netrc\n")
	writeFile(t, filepath.Join(data, "scratch", otherShard, otherRun+"+event.json"), `{"another run's":"payload"}`)
	// A neighbour's event file in every shard, so that the run's own
	// shard holds one whichever it is: the step sees its own file alone.
	for i := range 16 {
		writeFile(t, filepath.Join(data, "scratch", strconv.FormatInt(int64(i), 16), "01NEIGHBOURXXXXXXXXXXXXXXX+event.json"), `{"a neighbour's":"payload"}`)
	}
	// Where older hookruns put a run's workspace and HOME: without shards,
	// and under a directory of the run's own.
	writeFile(t, filepath.Join(data, "workspaces", otherRun, "secret.txt"), "another run's secret")
	writeFile(t, filepath.Join(data, "scratch", otherRun+"+home", ".netrc"), "machine github.com password another-runs-netrc\n")
	writeFile(t, filepath.Join(data, "scratch", otherRun, "home", ".netrc"), "machine github.com password another-runs-netrc\n")
	if err := os.MkdirAll(filepath.Join(dir, "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+data+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["Codertocat/*"]
github: { webhook_secret: "`+secret+`", token: "${GITHUB_TOKEN}", api_url: "`+ghSrv.URL+`/" }
api: { token: "`+apiToken+`" }
shutdown_grace: 5s
`)
	if err := os.Chmod(cfg, 0o644); err != nil { // readable by anyone: hiding must not depend on modes
		t.Fatal(err)
	}
	p := startHookrun(t, "serve", []string{"GITHUB_TOKEN=" + ghToken}, "serve", "--config", cfg, "--log-format", "json")
	url := "http://" + addr
	waitReady(t, p, url, 60*time.Second)

	// The workflow names serve's pid, known only now; it is picked up by
	// the reload.
	writeFile(t, filepath.Join(dir, "workflows", "trust.yaml"), `name: trust
on:
  - event: pull_request
env:
  - HOOKRUN_PID: "`+strconv.Itoa(p.cmd.Process.Pid)+`"
  - CONFIG_FILE: `+cfg+`
  - DATA_DIR: `+data+`
  - OTHER_SHARD: "`+otherShard+`"
steps:
  - id: probes
    run: |
`+indent(trustProbes, "      ")+`
    output: PROBES
report:
  comment: sticky
  status: true
  body: |
    ${PROBES}
`)
	waitFor(t, 20*time.Second, func() bool { return strings.Contains(p.out.String(), `"workflow":"trust"`) })

	code, ans := postGitHub(t, url, secret, "pull_request", "trust-1", fixture(t, "github/pull_request/opened.payload.json"))
	if code != http.StatusAccepted || len(ans.Runs) != 1 {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	id := ans.Runs[0].ID
	var rec map[string]any
	waitFor(t, 60*time.Second, func() bool {
		return apiGet(t, url, apiToken, "/api/v1/runs/"+id, &rec) == http.StatusOK && (rec["status"] == "succeeded" || rec["status"] == "failed")
	})
	if rec["status"] != "succeeded" {
		t.Fatalf("run: %+v", rec)
	}
	logs := apiText(t, url, apiToken, "/api/v1/runs/"+id+"/logs")
	for _, probe := range []string{"parent-environ", "hookrun-environ", "hookrun-maps", "hookrun-mem", "any-environ", "own-environ",
		"config-file", "data-dir", "nats-store", "mirrors", "other-runs", "other-run-file", "other-run-file-flat", "other-scratch",
		"other-home", "other-event", "other-home-flat", "other-home-legacy"} {
		if !strings.Contains(logs, "denied "+probe+"\n") {
			t.Errorf("probe %s was not denied", probe)
		}
	}
	if strings.Contains(logs, "LEAK") {
		t.Errorf("a host step read what it must not:\n%s", logs)
	}
	scratch := filepath.Join(data, "scratch", git.RunShard(id))
	if !strings.Contains(logs, "uid=65534 home="+filepath.Join(scratch, id+"+home")+" tmp="+filepath.Join(scratch, id+"+tmp")) ||
		!strings.Contains(logs, "own dirs writable") {
		t.Errorf("the step did not run as the step user with its own HOME and TMPDIR:\n%s", logs)
	}
	if !strings.Contains(logs, "own event file readable, not writable: "+filepath.Join(scratch, id+"+event.json")+"\n") {
		t.Errorf("the step did not read its own event file in its shard:\n%s", logs)
	}

	waitFor(t, 10*time.Second, func() bool {
		gh.mu.Lock()
		defer gh.mu.Unlock()
		return len(gh.statuses) >= 2 && gh.statuses[len(gh.statuses)-1] == "success"
	})
	raw, _ := json.Marshal(rec)
	gh.mu.Lock()
	var comments strings.Builder
	for _, b := range gh.comments {
		comments.WriteString(b)
	}
	bad := gh.bad
	gh.mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", bad)
	}
	if !strings.Contains(comments.String(), "denied config-file") {
		t.Errorf("the comment does not carry the probes' output:\n%s", comments.String())
	}
	for where, text := range map[string]string{"step logs": logs, "run record": string(raw), "comment": comments.String(), "hookrun's log": p.out.String()} {
		for _, s := range []string{ghToken, secret, apiToken, "another run's secret", "another-runs-netrc"} {
			if strings.Contains(text, s) {
				t.Errorf("%s contains %q", where, s)
			}
		}
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// apiText GETs path with the API token and returns the body.
func apiText(t *testing.T, url, token, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// startHookrunAsNobody is startHookrun for an unprivileged hookrun: a copy
// of the test binary (its build directory is root's) run as 65534:65534.
func startHookrunAsNobody(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	bin := filepath.Join(stepWritableDir(t), "hookrun")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startHookrunBinary(t, name, bin, &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}, env, args...)
	return p
}

// TestHostStepsOfAnUnprivilegedHookrun: a hookrun that is not root cannot
// run host steps as another user, so it refuses them with a run error that
// says what to do, unless runner.host_steps is same_user, which runs them
// as hookrun's own user and says at start what that means.
func TestHostStepsOfAnUnprivilegedHookrun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test starts hookrun as another user: run it as root (CI does)")
	}
	for _, tt := range []struct {
		name, runner, wantStatus, wantLog, wantInLogs string
	}{
		{"isolated refuses", "", "failed", "host steps are refused", ""},
		{"same_user runs them as hookrun", "runner: { host_steps: same_user }", "succeeded", "host steps run with hookrun's own privileges", "uid=65534"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const secret, apiToken = "nobody-secret", "nobody-api"
			dir := stepWritableDir(t)
			writeFile(t, filepath.Join(dir, "workflows", "who.yaml"), `name: who
on:
  - event: pull_request
steps:
  - id: who
    run: echo "uid=$(id -u)"
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
`+tt.runner+`
`)
			for _, p := range []string{dir, filepath.Join(dir, "workflows"), filepath.Join(dir, "workflows", "who.yaml"), cfg} {
				if err := os.Chown(p, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
			p := startHookrunAsNobody(t, "serve", nil, "serve", "--config", cfg, "--log-format", "json")
			url := "http://" + addr
			waitReady(t, p, url, 60*time.Second)
			if !strings.Contains(p.out.String(), tt.wantLog) {
				t.Errorf("start log lacks %q:\n%s", tt.wantLog, p.out.String())
			}
			code, ans := postGitHub(t, url, secret, "pull_request", "nobody-1", fixture(t, "github/pull_request/opened.payload.json"))
			if code != http.StatusAccepted || len(ans.Runs) != 1 {
				t.Fatalf("delivery: %d %+v", code, ans)
			}
			id := ans.Runs[0].ID
			var rec struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			}
			waitFor(t, 60*time.Second, func() bool {
				return apiGet(t, url, apiToken, "/api/v1/runs/"+id, &rec) == http.StatusOK && (rec.Status == "succeeded" || rec.Status == "failed")
			})
			if rec.Status != tt.wantStatus {
				t.Fatalf("run %s, want %s (error %q)", rec.Status, tt.wantStatus, rec.Error)
			}
			if tt.wantStatus == "failed" {
				for _, want := range []string{"host steps are refused", "not root", "container", "runner.host_steps: same_user"} {
					if !strings.Contains(rec.Error, want) {
						t.Errorf("run error %q does not say %q", rec.Error, want)
					}
				}
			}
			if logs := apiText(t, url, apiToken, "/api/v1/runs/"+id+"/logs"); !strings.Contains(logs, tt.wantInLogs) {
				t.Errorf("logs lack %q:\n%s", tt.wantInLogs, logs)
			}
		})
	}
}

// TestLocalRunKeepsTheInvokingUser: `hookrun run` has no server
// credentials to protect and runs host steps as whoever runs it.
func TestLocalRunKeepsTheInvokingUser(t *testing.T) {
	wf := writeFile(t, filepath.Join(t.TempDir(), "who.yaml"), "name: who\nsteps:\n  - id: who\n    run: echo \"uid=$(id -u) home=$HOME\"\n")
	code, stdout, stderr := runCLI(t, "run", wf)
	want := fmt.Sprintf("[who] uid=%d home=%s", os.Geteuid(), os.Getenv("HOME"))
	if code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("exit %d, stdout %q (want %q), stderr %q", code, stdout, want, stderr)
	}
}

// TestDevConfigRunsHostStepsAsTheUser: the configuration `make run`
// generates says host_steps: same_user, with a comment saying why, and is a
// valid configuration.
func TestDevConfigRunsHostStepsAsTheUser(t *testing.T) {
	devDir := t.TempDir()
	cmd := exec.Command("../../scripts/dev-run.sh", "--config-only")
	cmd.Env = append(os.Environ(), "HOOKRUN_DEV_DIR="+devDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dev-run.sh --config-only: %v\n%s", err, out)
	}
	path := filepath.Join(devDir, "dev.yaml")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "# host steps run as you") {
		t.Errorf("the generated config does not explain host_steps:\n%s", text)
	}
	env := map[string]string{"HOOKRUN_DEV_WEBHOOK_SECRET": "x", "HOOKRUN_DEV_API_TOKEN": "y"}
	c, err := loadConfig(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if c.Runner.HostSteps != app.HostStepsSameUser || len(c.AllowRepos) == 0 {
		t.Fatalf("host_steps %q, allow_repos %v", c.Runner.HostSteps, c.AllowRepos)
	}
}
