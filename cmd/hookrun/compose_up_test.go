//go:build compose

package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/hookrun/hookrun/internal/localimage"
	"github.com/hookrun/hookrun/providers/docker/dockertest"
)

// composeGitHub is what the compose runners reach of "GitHub" from inside
// their containers: git smart HTTP for Codertocat/Hello-World behind
// Basic x-access-token:<token>, as GitHub takes it, and the REST API under
// /api/v3/ (GitHub Enterprise Server's layout: api_url names it, and the
// clone URLs' origin must be its host). With reports off, the runners have
// no business on the API beyond GET /user; anything else is recorded.
type composeGitHub struct {
	token string
	git   http.Handler

	mu      sync.Mutex
	fetches int      // git requests with the token
	bad     []string // requests the real GitHub would refuse, or that nothing should send
}

func (f *composeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/v3/") {
		ok := r.Header.Get("Authorization") == "Bearer "+f.token || r.Header.Get("Authorization") == "token "+f.token
		if ok && r.Method == http.MethodGet && r.URL.Path == "/api/v3/user" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"login":"hookrun-bot","id":1}`)
			return
		}
		f.mu.Lock()
		f.bad = append(f.bad, fmt.Sprintf("unexpected API request %s %s (auth ok: %v)", r.Method, r.URL.Path, ok))
		f.mu.Unlock()
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	user, pass, ok := "", "", false
	if b, found := strings.CutPrefix(r.Header.Get("Authorization"), "Basic "); found {
		if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
			user, pass, ok = strings.Cut(string(raw), ":")
		}
	}
	if !ok || user != "x-access-token" || pass != f.token {
		// git asks without credentials first and sends them when challenged.
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/Codertocat/Hello-World.git/") {
		f.mu.Lock()
		f.bad = append(f.bad, "git request for "+r.URL.Path)
		f.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	f.fetches++
	f.mu.Unlock()
	f.git.ServeHTTP(w, r)
}

const composeLoadWorkflow = `name: load
on:
  - event: pull_request
    actions: [opened]
authorize: { author_association: [OWNER] }
steps:
  - id: work
    run: sleep 1
  # The marker goes beside the runner's workspaces, in its data_dir: a host
  # directory mounted at the same path, which the test reads.
  - id: mark
    depends: [work]
    run: echo "$HOOKRUN_RUN_ID load" >> "${HOOKRUN_WORKSPACE%/workspaces/*}/marks.log"
report: { comment: none, status: false }
`

// The step container sees the run's checkout at /workspace and its event
// file, both bind-mounted by the host's Docker daemon from the paths the
// runner (in its own container) prepared them at.
const composeCheckoutWorkflow = `name: checkout
on:
  - event: pull_request
    actions: [reopened]
authorize: { author_association: [OWNER] }
checkout: true
steps:
  - id: read
    container: { image: ` + dockertest.Ref + `, pull_policy: never }
    run: |
      set -e
      test "$PWD" = /workspace
      grep -q '"reopened"' "$HOOKRUN_EVENT_PATH"
      cat version.txt
    output: VERSION
  - id: mark
    depends: [read]
    run: echo "$HOOKRUN_RUN_ID checkout $VERSION" >> "${HOOKRUN_WORKSPACE%/workspaces/*}/marks.log"
report: { comment: none, status: false }
`

// TestComposeUp runs docker-compose.yml as it is: the images built locally
// (internal/localimage: the static hookrun binary and the host's git on
// busybox, nats-server from its Go module), `docker-compose up` of 3 NATS
// nodes, 2 ingress and 2 runners under a project name of its own. Signed
// deliveries go to both ingress ports at once while runner-1 and NATS node
// nats-3 are killed (docker kill); both are started again while runs are in flight. Every run ends succeeded, its terminal record
// written exactly once (the runners' "run finished" logs), its last step
// executed at least once and more often only when the run was taken over;
// one run's per-step container reads the checked-out repository and the
// event file. `make compose-test` runs it (build tag compose).
func TestComposeUp(t *testing.T) {
	const loads = 40
	const secret, ghToken, apiToken = "compose-secret", "compose-gh-token", "compose-api-token"
	start := time.Now()
	composeBin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose is required: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cli, err := dockertest.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if err := dockertest.Ensure(ctx, cli); err != nil {
		t.Fatal(err)
	}

	// Everything on the shared daemon carries this project's name.
	project := "hookrun-ct-" + randomHex(t, 4)
	hookrunRef, natsRef := project+"-hookrun:latest", project+"-nats:latest"
	t.Cleanup(func() {
		for _, ref := range []string{hookrunRef, natsRef} {
			if _, err := cli.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true}); err != nil && !strings.Contains(err.Error(), "No such image") {
				t.Logf("removing image %s: %v", ref, err)
			}
		}
	})
	if err := localimage.Build(ctx, cli, localimage.Config{HookrunRef: hookrunRef, NATSRef: natsRef, Module: "../..",
		BinDir: t.TempDir(), Labels: map[string]string{"hookrun.compose-test": project}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("images built after %v", time.Since(start).Round(time.Second))

	// "GitHub" on the host, where the containers reach it: the address of
	// the host on Docker's default bridge.
	up := newGitUpstream(t)
	nonce := "compose-" + randomHex(t, 6)
	head, _ := up.branch(2, nonce, "not-this-one")
	gh := &composeGitHub{token: ghToken, git: gitHTTPBackend(t, up.root)}
	ln, err := net.Listen("tcp", net.JoinHostPort(dockerHostIP(t, ctx, cli), "0"))
	if err != nil {
		t.Fatal(err)
	}
	ghSrv := httptest.NewUnstartedServer(gh)
	ghSrv.Listener.Close()
	ghSrv.Listener = ln
	ghSrv.Start()
	t.Cleanup(ghSrv.Close)

	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	for _, r := range []string{"runner-1", "runner-2"} {
		if err := os.MkdirAll(filepath.Join(data, r), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	workflowsDir := filepath.Join(dir, "workflows")
	writeFile(t, filepath.Join(workflowsDir, "load.yaml"), composeLoadWorkflow)
	writeFile(t, filepath.Join(workflowsDir, "checkout.yaml"), composeCheckoutWorkflow)
	// deploy/hookrun.cluster.yaml with this test's repository, forge and
	// timings; host steps as the runner's own user (root in its container,
	// which lacks the CAP_SYS_ADMIN that isolating them needs).
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: 0.0.0.0:8080
data_dir: /var/lib/hookrun
workflows: /etc/hookrun/workflows
allow_repos: ["Codertocat/Hello-World"]
nats:
  url: nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222
  replicas: 3
  user: hookrun
  password: ${HOOKRUN_NATS_PASSWORD}
github:
  webhook_secret: ${GITHUB_WEBHOOK_SECRET}
  token: ${GITHUB_TOKEN}
  api_url: `+ghSrv.URL+`/api/v3/
api:
  token: ${HOOKRUN_API_TOKEN}
runner: { concurrency: 4, ack_wait: 2s, heartbeat: 500ms, host_steps: same_user }
runs: { request_key: "${HOOKRUN_REQUEST_KEY}" }
log: { format: json }
shutdown_grace: 5s
`)
	ports := []string{freeAddr(t), freeAddr(t)}
	env := append(os.Environ(),
		"GITHUB_WEBHOOK_SECRET="+secret, "GITHUB_TOKEN="+ghToken, "HOOKRUN_API_TOKEN="+apiToken,
		"HOOKRUN_NATS_PASSWORD="+composeNATSPassword,
		"HOOKRUN_REQUEST_KEY=compose-up-request-key-0123456789abcdef",
		"HOOKRUN_IMAGE="+hookrunRef, "NATS_IMAGE="+natsRef,
		"HOOKRUN_CONFIG="+cfg, "HOOKRUN_WORKFLOWS="+workflowsDir, "HOOKRUN_DATA_DIR="+data,
		"HOOKRUN_INGRESS_1_PORT="+ports[0], "HOOKRUN_INGRESS_2_PORT="+ports[1])
	dc := func(args ...string) (string, error) {
		cmd := exec.CommandContext(context.Background(), composeBin, append([]string{"-f", "../../docker-compose.yml", "-p", project}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	var runIDs sync.Map // run id → true: every run this test created
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := dc("logs", "--no-color", "--tail", "150")
			t.Logf("--- docker-compose logs ---\n%s", out)
			if logDir := os.Getenv("HOOKRUN_TEST_LOGDIR"); logDir != "" {
				// The whole logs, for a failure the tails do not explain.
				all, _ := dc("logs", "--no-color", "--timestamps")
				f := filepath.Join(logDir, project+".log")
				if err := os.WriteFile(f, []byte(all), 0o644); err == nil {
					t.Logf("whole docker-compose logs: %s", f)
				}
			}
		}
		if out, err := dc("down", "-v", "--remove-orphans", "-t", "5"); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
		// Step containers the runners did not get to remove (a run killed
		// with its runner), never another test's.
		for _, id := range leftoverSteps(t, cli, &runIDs) {
			_ = cli.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true})
		}
	})
	if out, err := dc("up", "-d", "--no-build"); err != nil {
		t.Fatalf("docker-compose up: %v\n%s", err, out)
	}
	containers := map[string]string{} // service → container id (kept across kill and start)
	containerOf := func(service string) string {
		if id, ok := containers[service]; ok {
			return id
		}
		out, err := dc("ps", "-q", service)
		if err != nil || strings.TrimSpace(out) == "" {
			t.Fatalf("docker-compose ps %s: %v %q", service, err, out)
		}
		containers[service] = strings.TrimSpace(out)
		return containers[service]
	}
	for _, s := range []string{"runner-1", "runner-2", "nats-3"} {
		containerOf(s)
	}
	logsOf := func(service string) string { return containerLogs(t, cli, containers[service]) }
	var ingressURLs []string
	for _, p := range ports {
		ingressURLs = append(ingressURLs, "http://"+p)
	}
	for _, u := range ingressURLs {
		waitFor(t, 90*time.Second, func() bool {
			resp, err := http.Get(u + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	// A runner serves no HTTP; it needs only to be running (deliveries
	// wait in the stream until it pulls them).
	for _, r := range []string{"runner-1", "runner-2"} {
		if info, err := cli.ContainerInspect(ctx, containers[r]); err != nil || !info.State.Running {
			t.Fatalf("%s is not running: %v\n%s", r, err, logsOf(r))
		}
	}
	t.Logf("topology up after %v", time.Since(start).Round(time.Second))

	opened := fixture(t, "github/pull_request/opened.payload.json")
	reopened := patchPayload(t, "github/pull_request/opened.payload.json", ghSrv.URL+"/Codertocat/Hello-World.git", func(m map[string]any) {
		m["action"] = "reopened"
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
	})
	type delivery struct {
		id, event string
		body      []byte
	}
	var (
		sent       atomic.Int64
		checkoutID atomic.Value
		wg         sync.WaitGroup
	)
	next := make(chan delivery)
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer dcancel()
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for d := range next {
				for attempt := 0; ; attempt++ {
					// A NATS node dies mid-load: a 503 is the contract
					// (nothing was persisted); the forge would redeliver,
					// so we do too, on the other ingress.
					code, ans := postGitHub(t, ingressURLs[(w+attempt)%2], secret, d.event, d.id, d.body)
					if code == http.StatusAccepted && len(ans.Runs) == 1 {
						runIDs.Store(ans.Runs[0].ID, true)
						if ans.Runs[0].Workflow == "checkout" {
							checkoutID.Store(ans.Runs[0].ID)
						}
						sent.Add(1)
						break
					}
					if attempt > 100 || dctx.Err() != nil {
						t.Errorf("delivery %s: %d %+v", d.id, code, ans)
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
		}(w)
	}
	kill := func(service string) {
		if err := cli.ContainerKill(ctx, containerOf(service), "KILL"); err != nil {
			t.Errorf("docker kill %s: %v", service, err)
		}
	}
	for i := 0; i < loads; i++ {
		switch i {
		case loads / 4:
			// Wait until runner-1 holds a run, then kill it without warning.
			waitFor(t, 60*time.Second, func() bool { return strings.Contains(logsOf("runner-1"), `"claimed run"`) })
			kill("runner-1")
			t.Logf("killed runner-1 after %d deliveries", sent.Load())
		case loads / 3:
			next <- delivery{id: project + "-checkout", event: "pull_request", body: reopened}
		case loads / 2:
			kill("nats-3")
			t.Logf("killed nats-3 after %d deliveries", sent.Load())
		}
		next <- delivery{id: fmt.Sprintf("%s-load-%03d", project, i), event: "pull_request", body: touched(t, opened, i)}
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d deliveries accepted after %v", sent.Load(), time.Since(start).Round(time.Second))
	// runner-1 and nats-3 come back, as a supervisor would bring them
	// back, while runs are in flight. The rejoining node serves the run
	// records as it held them until it has caught up: a runner's watch
	// delivered a run's queued record milliseconds after the runner
	// claimed it, and the runner gave the run up and acked its message, so
	// nothing ran it again (2 of 3 test runs). A watched record is now only
	// a hint the heartbeat verifies, the heartbeat reads a record that says
	// the claim is gone again before it believes it (queue's byClaimant),
	// and a run lost to a queued record is handed back rather than acked.
	if err := cli.ContainerStart(ctx, containerOf("runner-1"), container.StartOptions{}); err != nil {
		t.Errorf("docker start runner-1: %v", err)
	}
	if err := cli.ContainerStart(ctx, containerOf("nats-3"), container.StartOptions{}); err != nil {
		t.Errorf("docker start nats-3: %v", err)
	}

	ids := map[string]bool{}
	runIDs.Range(func(k, _ any) bool { ids[k.(string)] = true; return true })
	if len(ids) != loads+1 {
		t.Fatalf("%d distinct run ids for %d deliveries", len(ids), loads+1)
	}
	statuses, attempts := map[string]string{}, map[string]int{}
	defer func() {
		if t.Failed() {
			for id := range ids {
				if statuses[id] != "succeeded" {
					t.Logf("run %s: %q (attempt %d)", id, statuses[id], attempts[id])
				}
			}
		}
	}()
	waitFor(t, 150*time.Second, func() bool {
		var list struct {
			Runs []struct {
				ID      string `json:"id"`
				Status  string `json:"status"`
				Attempt int    `json:"attempt"`
			} `json:"runs"`
		}
		if apiGet(t, ingressURLs[1], apiToken, "/api/v1/runs?limit=1000", &list) != http.StatusOK {
			return false
		}
		terminal := 0
		for _, r := range list.Runs {
			if !ids[r.ID] {
				continue
			}
			statuses[r.ID], attempts[r.ID] = r.Status, r.Attempt
			switch r.Status {
			case "succeeded", "partially_succeeded", "failed", "cancelled":
				terminal++
			}
		}
		return terminal == len(ids)
	})
	t.Logf("every run terminal after %v", time.Since(start).Round(time.Second))
	for id := range ids {
		if statuses[id] != "succeeded" {
			t.Errorf("run %s ended %q (attempt %d)", id, statuses[id], attempts[id])
		}
	}

	// The terminal record of each run was written by exactly one runner
	// process: "run finished" across both runners' whole logs (runner-1's
	// before its kill and after its restart).
	finished := map[string]int{}
	for _, r := range []string{"runner-1", "runner-2"} {
		sc := bufio.NewScanner(strings.NewReader(logsOf(r)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l struct {
				Msg string `json:"msg"`
				Run string `json:"run"`
			}
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "run finished" {
				finished[l.Run]++
			}
		}
	}
	// Each run's last step ran to the end at least once; a second time only
	// for a run taken over from the killed runner (attempt > 1).
	marks := map[string]int{}
	var checkoutLines []string
	for _, r := range []string{"runner-1", "runner-2"} {
		raw, err := os.ReadFile(filepath.Join(data, r, "marks.log"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			marks[f[0]]++
			if f[1] == "checkout" {
				checkoutLines = append(checkoutLines, line)
			}
		}
	}
	takenOver := 0
	for id := range ids {
		if finished[id] != 1 {
			t.Errorf("run %s finished %d times, want exactly 1", id, finished[id])
		}
		if marks[id] < 1 {
			t.Errorf("run %s never executed its last step", id)
		}
		if marks[id] > 1 && attempts[id] < 2 {
			t.Errorf("run %s executed %d times without a takeover", id, marks[id])
		}
		if attempts[id] > 1 {
			takenOver++
		}
	}
	t.Logf("%d runs, %d taken over after the runner kill", len(ids), takenOver)
	if takenOver == 0 {
		t.Errorf("no run was taken over: the runner kill did not hit a run in flight")
	}

	// The step container read the pull request's head from the checkout.
	cid, _ := checkoutID.Load().(string)
	if cid == "" {
		t.Fatal("the reopened delivery created no checkout run")
	}
	want := cid + " checkout " + nonce
	if len(checkoutLines) == 0 || checkoutLines[len(checkoutLines)-1] != want {
		t.Errorf("checkout run's marks %q, want the last to be %q (the step container read version.txt of %s)", checkoutLines, want, head)
	}
	gh.mu.Lock()
	if gh.fetches == 0 {
		t.Errorf("no runner fetched from the git server with the token")
	}
	if len(gh.bad) > 0 {
		t.Errorf("requests the forge would refuse: %v", gh.bad)
	}
	gh.mu.Unlock()

	// The runners removed their step containers, the killed one's included.
	waitFor(t, 30*time.Second, func() bool { return len(leftoverSteps(t, cli, &runIDs)) == 0 })
	t.Logf("done after %v", time.Since(start).Round(time.Second))
}

// containerLogs is the whole output of container id, stdout and stderr,
// across its restarts.
func containerLogs(t *testing.T, cli client.APIClient, id string) string {
	t.Helper()
	rc, err := cli.ContainerLogs(context.Background(), id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Logf("reading the logs of %.12s: %v", id, err)
		return ""
	}
	defer rc.Close()
	var out lockedBuffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil {
		t.Logf("reading the logs of %.12s: %v", id, err)
	}
	return out.String()
}

// leftoverSteps are the containers labelled hookrun.run with one of ids.
func leftoverSteps(t *testing.T, cli client.APIClient, ids *sync.Map) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "hookrun.run"))})
	if err != nil {
		t.Errorf("listing containers: %v", err)
		return nil
	}
	var out []string
	for _, c := range list {
		if _, ours := ids.Load(c.Labels["hookrun.run"]); ours {
			out = append(out, c.ID)
		}
	}
	return out
}

// dockerHostIP is the host's address on Docker's default bridge, which
// containers on any bridge network reach.
func dockerHostIP(t *testing.T, ctx context.Context, cli client.APIClient) string {
	t.Helper()
	if nw, err := cli.NetworkInspect(ctx, "bridge", network.InspectOptions{}); err == nil {
		for _, c := range nw.IPAM.Config {
			if ip := net.ParseIP(c.Gateway); ip != nil && ip.To4() != nil {
				return c.Gateway
			}
		}
	}
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		t.Fatalf("finding the host's address on Docker's bridge: %v", err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatal("docker0 has no IPv4 address")
	return ""
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
