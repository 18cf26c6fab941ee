package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// webhook's hooks.json: the hook "github" (so its URL is /hooks/github, as
// hookrun's), running the script without waiting, answering 202, refusing
// with 400, on a rule that checks GitHub's signature with the bench's
// secret and matches what hookrun's workflow matches.
func TestWebhookHooks(t *testing.T) {
	data, err := webhookHooks("/x/step.sh", "/x")
	if err != nil {
		t.Fatal(err)
	}
	var hooks []map[string]any
	if err := json.Unmarshal(data, &hooks); err != nil {
		t.Fatalf("hooks.json is not a JSON list: %v\n%s", err, data)
	}
	if len(hooks) != 1 {
		t.Fatalf("%d hooks, want 1", len(hooks))
	}
	h := hooks[0]
	for key, want := range map[string]any{
		"id": "github", "execute-command": "/x/step.sh", "command-working-directory": "/x",
		"success-http-response-code": 202.0, "trigger-rule-mismatch-http-response-code": 400.0,
	} {
		if h[key] != want {
			t.Errorf("%s = %v, want %v", key, h[key], want)
		}
	}
	if _, ok := h["include-command-output-in-response"]; ok {
		t.Error("the hook waits for its command: webhook would answer after the run")
	}
	and, _ := h["trigger-rule"].(map[string]any)["and"].([]any)
	var hmacRule map[string]any
	var values []string
	for _, r := range and {
		m := r.(map[string]any)["match"].(map[string]any)
		p := m["parameter"].(map[string]any)
		switch m["type"] {
		case "payload-hmac-sha256":
			hmacRule = m
		case "value":
			values = append(values, p["source"].(string)+":"+p["name"].(string)+"="+m["value"].(string))
		}
	}
	if hmacRule == nil || hmacRule["secret"] != secret {
		t.Fatalf("no payload-hmac-sha256 rule with the bench's secret: %s", data)
	}
	if p := hmacRule["parameter"].(map[string]any); p["source"] != "header" || p["name"] != "X-Hub-Signature-256" {
		t.Errorf("the signature is read from %v, want the X-Hub-Signature-256 header", p)
	}
	want := "header:X-GitHub-Event=pull_request payload:action=opened payload:pull_request.base.ref=master"
	if got := strings.Join(values, " "); got != want {
		t.Errorf("value rules %q, want %q (what the workflow's on: matches)", got, want)
	}
}

// Both servers run the same command: one line into the fifo.
func TestPeerCommandsMatch(t *testing.T) {
	wf, script := peerWorkflow("/tmp/a b/marks"), peerScript("/tmp/a b/marks")
	const cmd = `echo x > "/tmp/a b/marks"`
	if !strings.Contains(wf, "run: "+cmd+"\n") {
		t.Errorf("workflow lacks the step %q:\n%s", cmd, wf)
	}
	if script != "#!/bin/sh\n"+cmd+"\n" {
		t.Errorf("script = %q", script)
	}
	if !strings.Contains(wf, "status: false") || !strings.Contains(wf, "comment: none") {
		t.Errorf("the workflow reports to the forge:\n%s", wf)
	}
}

// busyLoop is shell that spends about 0.2 s of CPU in the shell itself.
const busyLoop = `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done`

// treeCPU counts a descendant that still runs (its own time) and one that
// ended (in its parent's cutime once reaped).
func TestTreeCPU(t *testing.T) {
	for name, script := range map[string]string{
		// the inner sh spins, says so and lives on (the outer one waits, so
		// it does not exec the inner one): counted by the walk
		"running child": `sh -c '` + busyLoop + `; touch "$DONE"; sleep 30'; exit 0`,
		// the inner sh spins and is reaped by the outer one: its cutime
		"reaped child": `sh -c '` + busyLoop + `'; touch "$DONE"; sleep 30`,
	} {
		t.Run(name, func(t *testing.T) {
			done := filepath.Join(t.TempDir(), "done")
			cmd := exec.Command("sh", "-c", script)
			cmd.Env = append(os.Environ(), "DONE="+done)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			before, err := treeCPU(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(done); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the busy loop did not finish")
				}
			}
			after, err := treeCPU(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			// about 200 ms of CPU (100 to 600 measured under load)
			if spent := after - before; spent < 60*time.Millisecond {
				t.Errorf("tree spent %v, want the busy loop's CPU (about 200ms)", spent)
			}
		})
	}
}

// The table pairs each round's rows whichever server ran first and gives
// hookrun / webhook per figure and round, and the load averages.
func TestPeerTable(t *testing.T) {
	rep := &PeerReport{
		Machine:      Machine{CPUs: 2, GoVersion: "go-test", PayloadSize: 28011, LoadStart: 1.5, LoadEnd: 2.25, UnjournaledScratch: "/dev/vda"},
		DispatchRuns: 100, SerialOps: 300, DrainOps: 2000, BurstOps: 1000,
		Rows: []PeerRow{
			{Server: PeerHookrun, Round: 1, CPUPerDelivery: 9, DrainedPerSec: 200, SerialPerSec: 220, DispatchP50: 9, DispatchP99: 12, BurstPerSec: 1800, BurstP99: 60, LoadStart: 1.5, LoadEnd: 1.75},
			{Server: PeerWebhook, Round: 1, CPUPerDelivery: 1.5, DrainedPerSec: 1000, SerialPerSec: 880, DispatchP50: 3, DispatchP99: 4, BurstPerSec: 1000, BurstP99: 600, LoadStart: 1.75, LoadEnd: 2},
			{Server: PeerWebhook, Round: 2, CPUPerDelivery: 2, DrainedPerSec: 800, SerialPerSec: 1000, DispatchP50: 4, DispatchP99: 5, BurstPerSec: 900, BurstP99: 700, LoadStart: 2, LoadEnd: 2.1},
			{Server: PeerHookrun, Round: 2, CPUPerDelivery: 10, DrainedPerSec: 160, SerialPerSec: 250, DispatchP50: 10, DispatchP99: 15, BurstPerSec: 1620, BurstP99: 70, LoadStart: 2.1, LoadEnd: 2.25},
		},
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if name, rest, ok := strings.Cut(l, "  "); ok {
			lines[name] = strings.Join(strings.Fields(rest), " ")
		}
	}
	for name, want := range map[string]string{
		"CPU per delivery incl. the run (server + children), ms": "9.00, 10.00 1.50, 2.00 6.00, 5.00",
		"runs drained, 2000 deliveries at concurrency 8, runs/s": "200, 160 1000, 800 0.20, 0.20",
		"deliveries/s at concurrency 1":                          "220, 250 880, 1000 0.25, 0.25",
		"dispatch p50, request → command started, ms":            "9.0, 10.0 3.0, 4.0 3.00, 2.50",
		"accepted deliveries/s at concurrency 64":                "1800, 1620 1000, 900 1.80, 1.80",
		"p99 at concurrency 64, ms":                              "60.0, 70.0 600.0, 700.0 0.10, 0.10",
	} {
		if got := lines[name]; got != want {
			t.Errorf("%s: %q, want %q\n%s", name, got, want, out)
		}
	}
	for _, want := range []string{"load avg 1.50 → 2.25", "round 2 webhook  2.00 → 2.10", "round 2 hookrun  2.10 → 2.25",
		"on ext4 without a journal (/dev/vda): every run's directories cost more there"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	// Mounted with discard, the header says that removals wait.
	rep.Machine.ScratchDiscard = true
	b.Reset()
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if want := "on ext4 without a journal (/dev/vda), mounted with discard: every run's directories cost more there, and each one removed waits for the device"; !strings.Contains(b.String(), want) {
		t.Errorf("the table lacks %q:\n%s", want, b.String())
	}
}

// The whole comparison against a stand-in for webhook (a small Go server
// that evaluates the generated hooks.json and runs its /bin/sh script), in
// quick mode: each row has every figure, the rounds alternate, and a
// delivery the stand-in refuses (a bad signature) would have failed it.
func TestRunPeerWithFakeWebhook(t *testing.T) {
	hookrun := buildHookrun(t)
	fake := filepath.Join(t.TempDir(), "fakewebhook")
	if out, err := exec.Command("go", "build", "-o", fake, "./testdata/fakewebhook").CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := RunPeer(ctx, PeerConfig{Binary: hookrun, Webhook: fake, Quick: true, Progress: &progress})
	if err != nil {
		t.Fatalf("bench peer: %v\nprogress:\n%s", err, progress.String())
	}
	var order []string
	for _, r := range rep.Rows {
		order = append(order, r.Server)
		for name, v := range map[string]float64{
			"cpu": float64(r.CPUPerDelivery), "drained": r.DrainedPerSec, "serial": r.SerialPerSec,
			"dispatch p50": float64(r.DispatchP50), "burst": r.BurstPerSec, "burst p99": float64(r.BurstP99),
		} {
			if v <= 0 {
				t.Errorf("round %d %s: %s = %v, want a positive figure", r.Round, r.Server, name, v)
			}
		}
		if r.BurstAccepted != rep.BurstOps {
			t.Errorf("round %d %s accepted %d of %d deliveries at concurrency 64", r.Round, r.Server, r.BurstAccepted, rep.BurstOps)
		}
	}
	if got := strings.Join(order, " "); got != "hookrun webhook webhook hookrun" {
		t.Errorf("servers ran in the order %q, want the rounds to alternate", got)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "QUICK") {
		t.Errorf("a quick run does not say so:\n%s", b.String())
	}
}
