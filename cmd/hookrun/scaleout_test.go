package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
)

// buildNATSServer builds the real nats-server binary from the module cache
// (the same version hookrun embeds).
func buildNATSServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building nats-server: %v\n%s", err, out)
	}
	return bin
}

type natsNode struct {
	name, client, cluster string
	p                     *proc
}

// scaleNATSPassword is the topology's HOOKRUN_NATS_PASSWORD: the nodes
// require it of clients (deploy/nats.conf) and of routes (user "route", in
// the --cluster and --routes URLs, as docker-compose.yml does).
const scaleNATSPassword = "5ca1e0a7c0ffee"

// startNATSCluster starts three nats-server processes with JetStream,
// routed to each other on loopback, each with the compose topology's
// configuration (deploy/nats.conf) and its store in a temp dir. Clients
// present user hookrun and scaleNATSPassword. It returns once JetStream
// answers on every node (a meta leader is elected), so that the hookrun
// processes started next do not spend their own setup bound waiting for
// the cluster; a node that exits first (its port taken by another test
// process between freeAddr and its bind) or a cluster that does not come
// up in time is started again on fresh ports, at most 3 times. When the
// test fails, each node's output is printed.
func startNATSCluster(t *testing.T, bin string) []*natsNode {
	t.Helper()
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var nodes []*natsNode
		if nodes, err = tryNATSCluster(t, bin); err == nil {
			return nodes
		}
		t.Logf("starting the NATS cluster, attempt %d: %v", attempt, err)
	}
	t.Fatal(err)
	return nil
}

func tryNATSCluster(t *testing.T, bin string) ([]*natsNode, error) {
	nodes := make([]*natsNode, 3)
	for i := range nodes {
		nodes[i] = &natsNode{name: fmt.Sprintf("n%d", i+1), client: freeAddr(t), cluster: freeAddr(t)}
	}
	const routeAuth = "route:" + scaleNATSPassword + "@"
	var routes []string
	for _, n := range nodes {
		routes = append(routes, "nats://"+routeAuth+n.cluster)
	}
	for _, n := range nodes {
		host, port := splitHostPort(t, n.client)
		cmd := exec.Command(bin, "-c", "../../deploy/nats.conf", "-sd", filepath.Join(t.TempDir(), n.name), "-n", n.name,
			"-a", host, "-p", port, "--cluster_name", "hookrun", "--cluster", "nats://"+routeAuth+n.cluster,
			"--routes", strings.Join(routes, ","))
		cmd.Env = append(os.Environ(), "HOOKRUN_NATS_PASSWORD="+scaleNATSPassword)
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &proc{t: t, name: n.name, cmd: cmd, out: out, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			p.stop(syscall.SIGTERM, 5*time.Second)
			if t.Failed() {
				t.Logf("--- output of nats-server %s ---\n%s", p.name, tail(out.String(), 3000))
			}
		})
		n.p = p
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range nodes {
		if err := jetStreamAnswers(n, deadline); err != nil {
			for _, n := range nodes {
				n.p.stop(syscall.SIGKILL, 5*time.Second)
			}
			return nil, err
		}
	}
	return nodes, nil
}

// jetStreamAnswers waits until node n's JetStream answers an account info
// request (which needs a meta leader) or the node exits or deadline passes.
func jetStreamAnswers(n *natsNode, deadline time.Time) error {
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-n.p.done:
			return fmt.Errorf("nats-server %s exited: %s", n.name, tail(n.p.out.String(), 500))
		default:
		}
		nc, err := nats.Connect("nats://"+n.client, nats.UserInfo("hookrun", scaleNATSPassword), nats.Timeout(2*time.Second))
		if err == nil {
			js, jerr := jetstream.New(nc)
			if jerr == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err = js.AccountInfo(ctx)
				cancel()
			} else {
				err = jerr
			}
			nc.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("nats-server %s: JetStream did not answer within 60 s: %v", n.name, last)
}

// runsPending is how many run requests HOOKRUN_RUNS holds (unacked), as
// node n answers; -1 when it does not.
func runsPending(t *testing.T, n *natsNode) int {
	nc, err := nats.Connect("nats://"+n.client, nats.UserInfo("hookrun", scaleNATSPassword), nats.Timeout(2*time.Second))
	if err != nil {
		t.Logf("connecting to %s: %v", n.name, err)
		return -1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, queue.StreamRuns)
	if err != nil {
		return -1
	}
	info, err := s.Info(ctx)
	if err != nil {
		return -1
	}
	return int(info.State.Msgs)
}

func splitHostPort(t *testing.T, addr string) (string, string) {
	i := strings.LastIndex(addr, ":")
	return addr[:i], addr[i+1:]
}

// TestScaleOut brings up the docker-compose topology without images: three
// nats-server nodes on loopback (streams and KV at R3), two `hookrun
// ingress` and two `hookrun runner` processes. 200 deliveries are spread over
// both ingresses while one runner is killed with SIGKILL mid-run and one NATS
// node is killed: every run ends in a terminal state, each is completed
// (its terminal record written) exactly once, none is lost.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("scale-out test skipped in -short mode")
	}
	const total = 200
	const secret, apiToken = "scale-secret", "scale-api"
	nodes := startNATSCluster(t, buildNATSServer(t))
	var urls []string
	for _, n := range nodes {
		urls = append(urls, "nats://"+n.client)
	}
	dir := t.TempDir()
	marker := filepath.Join(stepWritableDir(t), "completions.log")
	writeFile(t, filepath.Join(dir, "workflows", "scale.yaml"), `name: scale
on:
  - event: pull_request
authorize: { author_association: [OWNER] }
steps:
  - id: work
    run: sleep 0.3
  - id: mark
    depends: [work]
    run: echo "$HOOKRUN_RUN_ID" >> `+marker+`
report: { comment: none, status: false }
`)
	cfgFor := func(listen string) string {
		return writeFile(t, filepath.Join(dir, "cfg-"+strings.ReplaceAll(listen, ":", "-")+".yaml"), `
listen: `+listen+`
workflows: `+filepath.Join(dir, "workflows")+`
nats: { url: "`+strings.Join(urls, ",")+`", replicas: 3, user: hookrun, password: "${HOOKRUN_NATS_PASSWORD}" }
allow_repos: ["Codertocat/*"]
github: { webhook_secret: "`+secret+`" }
api: { token: "`+apiToken+`" }
runner: { concurrency: 8, ack_wait: 2s, heartbeat: 500ms }
runs: { request_key: "scaleout-request-key-0123456789abcdef" }
shutdown_grace: 5s
`)
	}
	// As in docker-compose.yml: the configuration takes the password from
	// the environment.
	natsEnv := []string{"HOOKRUN_NATS_PASSWORD=" + scaleNATSPassword}
	var ingressURLs []string
	var ingresses []*proc
	for i := 0; i < 2; i++ {
		addr := freeAddr(t)
		cfg := cfgFor(addr)
		p := startHookrun(t, fmt.Sprintf("ingress-%d", i+1), natsEnv, "ingress", "--config", cfg, "--data-dir", filepath.Join(dir, fmt.Sprintf("ingress-%d", i+1)), "--log-format", "json")
		ingresses = append(ingresses, p)
		ingressURLs = append(ingressURLs, "http://"+addr)
	}
	for i, u := range ingressURLs {
		waitReady(t, ingresses[i], u, 90*time.Second)
	}
	var runners []*proc
	for i := 0; i < 2; i++ {
		cfg := cfgFor(freeAddr(t))
		runners = append(runners, startHookrun(t, fmt.Sprintf("runner-%d", i+1), natsEnv, "runner", "--config", cfg,
			"--data-dir", filepath.Join(dir, fmt.Sprintf("runner-%d", i+1)), "--log-format", "json"))
	}

	body := fixture(t, "github/pull_request/opened.payload.json")
	bodies := make([][]byte, total) // distinct events: ingress dedupes a re-sent body
	for i := range bodies {
		bodies[i] = touched(t, body, i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		mu     sync.Mutex
		runIDs = map[string]bool{}
		sent   atomic.Int64
	)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				delivery := fmt.Sprintf("scale-%03d", i)
				for attempt := 0; ; attempt++ {
					// A NATS node dies mid-load: a 503 is the contract
					// (nothing was persisted); the forge would redeliver, so
					// we do too, on the other ingress.
					code, ans := postGitHub(t, ingressURLs[(i+attempt)%2], secret, "pull_request", delivery, bodies[i])
					if code == http.StatusAccepted && len(ans.Runs) == 1 {
						mu.Lock()
						runIDs[ans.Runs[0].ID] = true
						mu.Unlock()
						sent.Add(1)
						break
					}
					if attempt > 50 || ctx.Err() != nil {
						t.Errorf("delivery %s: %d %+v", delivery, code, ans)
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
		}()
	}
	for i := 0; i < total; i++ {
		if i == total/4 {
			// Wait until runner-1 is mid-run, then kill it without warning.
			waitFor(t, 30*time.Second, func() bool { return strings.Contains(runners[0].out.String(), `"claimed run"`) })
			runners[0].kill()
			t.Logf("killed runner-1 after %d deliveries", sent.Load())
		}
		if i == total/2 {
			nodes[2].p.kill()
			t.Logf("killed NATS node n3 after %d deliveries", sent.Load())
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(runIDs) != total {
		t.Fatalf("%d distinct run ids for %d deliveries", len(runIDs), total)
	}

	// Every run reaches a terminal state.
	statuses := map[string]string{}
	attempts := map[string]int{}
	defer func() {
		if t.Failed() {
			hist := map[string]int{}
			for id, s := range statuses {
				hist[s]++
				if s != "succeeded" {
					t.Logf("run %s: %s (attempt %d)", id, s, attempts[id])
				}
			}
			t.Logf("statuses: %v", hist)
			for i, p := range ingresses {
				// What an ingress warned of (its index's watch, its
				// connection) before its whole tail below.
				var warned []string
				for _, l := range strings.Split(p.out.String(), "\n") {
					if strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
						warned = append(warned, l)
					}
				}
				if len(warned) > 30 {
					warned = append(warned[:15], warned[len(warned)-15:]...)
				}
				resp, err := http.Get(ingressURLs[i] + "/readyz")
				ready := fmt.Sprint(err)
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					ready = resp.Status + " " + string(b)
				}
				t.Logf("ingress-%d /readyz: %s; warnings:\n%s", i+1, ready, strings.Join(warned, "\n"))
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
		if apiGet(t, ingressURLs[0], apiToken, "/api/v1/runs?workflow=scale&limit=1000", &list) != http.StatusOK {
			return false
		}
		terminal := 0
		for _, r := range list.Runs {
			statuses[r.ID], attempts[r.ID] = r.Status, r.Attempt
			if r.Status == "succeeded" || r.Status == "failed" || r.Status == "cancelled" {
				terminal++
			}
		}
		return len(list.Runs) == total && terminal == total
	})
	for id := range runIDs {
		if statuses[id] != "succeeded" {
			t.Errorf("run %s ended %q", id, statuses[id])
		}
	}
	// A record can end before its message does: a result written with its
	// answer lost is handed back, and its redelivery finds the run ended
	// and acks it (the "run already finished" line counted below). Wait
	// until the work queue holds no message.
	waitFor(t, 60*time.Second, func() bool { return runsPending(t, nodes[0]) == 0 })

	// Completed exactly once: the terminal record of each run was written by
	// exactly one runner ("run finished" logs across both runner processes;
	// the killed one's log stops at the kill).
	finished := map[string]int{}
	killedClaimed := map[string]bool{} // runs runner-1 claimed before its kill
	// runs whose result write got no answer until StoreTimeout and whose
	// redelivery found them ended: the write had landed (written once,
	// logged as "run already finished" instead of "run finished")
	unanswered, ackedEnded := map[string]bool{}, map[string]bool{}
	for i, r := range runners {
		sc := bufio.NewScanner(strings.NewReader(r.out.String()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l struct {
				Msg string `json:"msg"`
				Run string `json:"run"`
				Err string `json:"err"`
			}
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			switch {
			case l.Msg == "run finished":
				finished[l.Run]++
			case l.Msg == "run failed, will retry" && strings.HasPrefix(l.Err, "finishing run "):
				unanswered[l.Run] = true
			case l.Msg == "run already finished; acking the redelivery":
				ackedEnded[l.Run] = true
			case l.Msg == "claimed run" && i == 0:
				killedClaimed[l.Run] = true
			}
		}
	}
	// Each run's steps ran to the end at least once; a second execution is
	// only allowed for a run the killed runner held (attempt > 1).
	data, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	marks := map[string]int{}
	for _, id := range strings.Fields(string(data)) {
		marks[id]++
	}
	takenOver, unlogged := 0, 0
	for id := range runIDs {
		switch {
		case finished[id] == 0 && killedClaimed[id] && attempts[id] == 1 && marks[id] >= 1:
			// runner-1 wrote the terminal record and was killed before its
			// "run finished" line: completed once, by the killed runner.
			unlogged++
		case finished[id] == 0 && unanswered[id] && ackedEnded[id] && marks[id] >= 1:
			unlogged++
		case finished[id] != 1:
			t.Errorf("run %s finished %d times, want exactly 1 (attempt %d, executed %d times); its lines:\n%s",
				id, finished[id], attempts[id], marks[id], linesOf(id, runners, ingresses))
		}
		if marks[id] < 1 {
			t.Errorf("run %s never executed its last step", id)
		}
		if attempts[id] > 1 {
			takenOver++
		}
		if marks[id] > 1 && attempts[id] < 2 {
			t.Errorf("run %s executed %d times without a takeover", id, marks[id])
		}
	}
	t.Logf("%d runs, %d taken over after the runner kill, %d finished without a \"run finished\" line (runner-1 killed right after the write, or a write whose answer was lost)", len(runIDs), takenOver, unlogged)
	if takenOver == 0 {
		t.Errorf("no run was taken over: the runner kill did not hit a run in flight")
	}
}

// linesOf are the lines of the processes' output that name run id, each
// prefixed with its process: what became of one run, when a check of it
// fails (the whole output is cut to its tail).
func linesOf(id string, groups ...[]*proc) string {
	var b strings.Builder
	for _, ps := range groups {
		for _, p := range ps {
			for _, l := range strings.Split(p.out.String(), "\n") {
				if strings.Contains(l, id) {
					fmt.Fprintf(&b, "%s: %s\n", p.name, l)
				}
			}
		}
	}
	return b.String()
}
