package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// forgeScript is what the host step of the attacking pull request runs:
// it speaks NATS's text protocol to the embedded server's TCP port (bash's
// /dev/tcp: no client needed) and publishes a run request of the deploy
// workflow as mallory: first without NATS credentials (refused by the
// server), then with valid ones (a step that got hold of them), once
// without an authenticator and under the run's own id (a real run's),
// once with a made-up one under a fresh id.
const forgeScript = `set -u
exec 3<>"/dev/tcp/127.0.0.1/$NATS_PORT" || { echo "no connection"; exit 1; }
read -r -t 5 info <&3
printf 'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nPING\r\n' >&3
read -r -t 5 answer <&3
echo "without credentials nats answered: $answer"
exec 3<&-
exec 3<>"/dev/tcp/127.0.0.1/$NATS_PORT" || { echo "no connection"; exit 1; }
read -r -t 5 info <&3
own=${FORGED//__ID__/$HOOKRUN_RUN_ID}
printf 'CONNECT {"verbose":false,"pedantic":false,"headers":true,"user":"hookrun","pass":"%s"}\r\n' "$NATS_PASS" >&3
printf 'PUB hookrun.runs.deploy %d\r\n%s\r\n' ${#own} "$own" >&3
fresh=${FORGED//__ID__/01FRESHFRGEDRVNXXXXXXXXXXX}
printf -v hdr 'NATS/1.0\r\nHookrun-Mac: %064d\r\n\r\n' 0
printf 'HPUB hookrun.runs.deploy %d %d\r\n%s%s\r\n' ${#hdr} $(( ${#hdr} + ${#fresh} )) "$hdr" "$fresh" >&3
printf 'PING\r\n' >&3
read -r -t 5 answer <&3
echo "with credentials nats answered: $answer"
`

// deployRequest is a run request of the deploy workflow for a /deploy
// comment by sender.
func deployRequest(t *testing.T, id, sender, assoc string) []byte {
	t.Helper()
	data, err := json.Marshal(&queue.RunRequest{V: queue.WireVersion, ID: id, Workflow: "deploy", Attempt: 1, CreatedAt: time.Now().UTC(),
		Event: workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindComment, Action: "created", DeliveryID: "forged-" + id,
			Repo: "Codertocat/Hello-World", CloneURL: "https://github.com/Codertocat/Hello-World.git", Sender: sender, AuthorAssociation: assoc,
			Comment:     &workflows.Comment{ID: 7, Body: "/deploy staging"},
			PullRequest: &workflows.PullRequest{Number: 2, HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", HeadRef: "changes", BaseRef: "main"},
			CommandArgs: "staging"}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestForgedRunRequestsNeverRun is issue 24's point 2(b) end to end:
// `hookrun serve`, as root, with its embedded NATS listening on loopback.
// A pull request's host step connects to it and publishes run requests of
// a /deploy workflow that only an OWNER may start, as mallory: without
// NATS credentials (point 2(a): the server refuses the connection), then
// with valid ones, without an authenticator (under its own, real run's
// id) and with a wrong one (point 2(b): the runner refuses them).
// Then a request with a valid authenticator (made here with the key from
// data_dir) but mallory's event. Nothing of the deploy workflow runs
// (its marker stays absent), the real run's record is untouched, the
// refusals are in hookrun's log and in the authenticated run's record;
// the same request by an OWNER does run (the marker proves the workflow
// could). The key never appears in the log.
func TestForgedRunRequestsNeverRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs hookrun as root, as production does (CI does)")
	}
	const (
		ghToken  = "ghp_reqauth-token-0123456789"
		secret   = "reqauth-webhook-secret"
		apiToken = "reqauth-api-token"
		natsPass = "reqauth-nats-password-0123456789"
	)
	_, ghSrv := newFakeGitHub(t, ghToken)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	marks := stepWritableDir(t)
	script := filepath.Join(marks, "forge.sh")
	writeFile(t, script, forgeScript)
	if err := os.Chmod(script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	addr, natsAddr := freeAddr(t), freeAddr(t)
	natsPort := natsAddr[strings.LastIndex(natsAddr, ":")+1:]
	forged := string(deployRequest(t, "__ID__", "mallory", "NONE"))
	writeFile(t, filepath.Join(dir, "workflows", "deploy.yaml"), `name: deploy
on:
  - event: comment
    command: /deploy
authorize:
  author_association: [OWNER]
checkout: false
steps:
  - id: deploy
    run: touch "`+marks+`/deployed-$HOOKRUN_RUN_ID"
`)
	writeFile(t, filepath.Join(dir, "workflows", "attack.yaml"), `name: attack
on:
  - event: pull_request
authorize:
  author_association: []
checkout: false
env:
  - NATS_PORT: "`+natsPort+`"
  - FORGED: '`+forged+`'
  - NATS_PASS: "`+natsPass+`"
steps:
  - id: forge
    run: bash `+script+`
`)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+data+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["Codertocat/*"]
nats: { listen: "`+natsAddr+`", password: "`+natsPass+`" }
github: { webhook_secret: "`+secret+`", token: "${GITHUB_TOKEN}", api_url: "`+ghSrv.URL+`/" }
api: { token: "`+apiToken+`" }
shutdown_grace: 5s
`)
	p := startHookrun(t, "serve", []string{"GITHUB_TOKEN=" + ghToken}, "serve", "--config", cfg, "--log-format", "json")
	url := "http://" + addr
	waitReady(t, p, url, 60*time.Second)
	keyFile := filepath.Join(data, app.RequestKeyFile)
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("request key file: %v, %v; want it generated with mode 0600", fi, err)
	}
	raw, _ := os.ReadFile(keyFile)
	key := strings.TrimSpace(string(raw))

	// The attacking pull request.
	code, ans := postGitHub(t, url, secret, "pull_request", "reqauth-1", fixture(t, "github/pull_request/opened.payload.json"))
	if code != http.StatusAccepted || len(ans.Runs) != 1 || ans.Runs[0].Workflow != "attack" {
		t.Fatalf("delivery: %d %+v", code, ans)
	}
	attack := ans.Runs[0].ID
	var rec map[string]any
	waitFor(t, 60*time.Second, func() bool {
		return apiGet(t, url, apiToken, "/api/v1/runs/"+attack, &rec) == http.StatusOK && (rec["status"] == "succeeded" || rec["status"] == "failed")
	})
	logs := apiText(t, url, apiToken, "/api/v1/runs/"+attack+"/logs")
	if rec["status"] != "succeeded" || !strings.Contains(logs, "with credentials nats answered: PONG") {
		t.Fatalf("the attacking step did not publish (status %v):\n%s", rec["status"], logs)
	}
	if !strings.Contains(logs, "without credentials nats answered: -ERR 'Authorization Violation'") {
		t.Errorf("NATS took a connection without credentials:\n%s", logs)
	}
	refusal := `"msg":"refusing a run request that ingress did not authenticate; nothing of it runs"`
	for deadline := time.Now().Add(20 * time.Second); strings.Count(p.out.String(), refusal) < 2 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	for _, claimed := range []string{attack, "01FRESHFRGEDRVNXXXXXXXXXXX"} {
		if !strings.Contains(p.out.String(), `"claimed_run":"`+claimed+`"`) {
			t.Errorf("no refusal logged for the forged request claiming run %s", claimed)
		}
	}
	if rec["error"] != "" || rec["workflow"] != "attack" {
		t.Errorf("the real run whose id a forged request carried: %+v", rec)
	}
	if code := apiGet(t, url, apiToken, "/api/v1/runs/01FRESHFRGEDRVNXXXXXXXXXXX", &map[string]any{}); code != http.StatusNotFound && code != http.StatusBadRequest {
		t.Errorf("the forged run id has a record (%d)", code)
	}

	// Authenticated, but an event the workflow's authorize refuses; then
	// the same request by an OWNER.
	nc, err := nats.Connect("nats://"+natsAddr, nats.UserInfo("hookrun", natsPass))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	publish := func(id, sender, assoc string) {
		t.Helper()
		body := deployRequest(t, id, sender, assoc)
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write([]byte("hookrun-run-request-v1\x00hookrun.runs.deploy\x00"))
		mac.Write(body)
		m := nats.NewMsg("hookrun.runs.deploy")
		m.Data = body
		m.Header.Set(queue.HeaderMAC, hex.EncodeToString(mac.Sum(nil)))
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	mallory, owner := queue.NewRunID(), queue.NewRunID()
	publish(mallory, "mallory", "NONE")
	publish(owner, "octo-owner", "OWNER")
	waitFor(t, 30*time.Second, func() bool {
		return apiGet(t, url, apiToken, "/api/v1/runs/"+mallory, &rec) == http.StatusOK && (rec["status"] == "failed" || rec["status"] == "succeeded")
	})
	if msg, _ := rec["error"].(string); !strings.Contains(msg, `author association NONE of "mallory" not in [OWNER]`) {
		t.Errorf("the authenticated request of mallory failed with %q, want the authorize refusal", msg)
	}
	if steps, _ := rec["steps"].([]any); len(steps) != 0 {
		t.Errorf("mallory's run has steps: %v", steps)
	}
	waitFor(t, 30*time.Second, func() bool {
		return apiGet(t, url, apiToken, "/api/v1/runs/"+owner, &rec) == http.StatusOK && rec["status"] == "succeeded"
	})

	entries, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	var deployed []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "deployed-") {
			deployed = append(deployed, strings.TrimPrefix(e.Name(), "deployed-"))
		}
	}
	if len(deployed) != 1 || deployed[0] != owner {
		t.Errorf("deploy ran for %v; want only the OWNER's authenticated run %s", deployed, owner)
	}
	if strings.Contains(p.out.String(), key) || strings.Contains(logs, key) {
		t.Error("the request key appears in hookrun's log or a run's log")
	}
}
