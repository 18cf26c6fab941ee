package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const slackE2EWorkflow = `name: slack-e2e
on:
  - event: chat
    command: deploy
    repo: myorg/app
authorize:
  slack_users: [U111]
  slack_channels: [C222]
steps:
  - id: deploy
    run: echo "deployed $HOOKRUN_COMMAND_ARGS by $HOOKRUN_CHAT_USER_NAME from $HOOKRUN_REPO"
    output: RESULT
  - id: event-file
    # the event file describes the command, without its response_url
    run: grep -q '"text":"deploy staging"' "$HOOKRUN_EVENT_PATH" && ! grep -q 'commands/T1' "$HOOKRUN_EVENT_PATH"
report:
  body: "${RESULT}"
`

// slackMessage is what a fake response_url received.
type slackMessage struct {
	Path         string
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

// TestSlackEndToEnd runs `hookrun serve` with a slack section: a signed
// `/hookrun deploy staging` is acknowledged within Slack's 3 s with the
// queued run, the run acts on the trigger's repository, and its result
// reaches the command's response_url (a fake under the configured prefix)
// with the rendered body (the steps never see that URL); a command whose response_url is elsewhere runs
// nothing.
func TestSlackEndToEnd(t *testing.T) {
	const secret = "slack-e2e-signing-secret"
	var (
		mu  sync.Mutex
		got []slackMessage
	)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m := slackMessage{Path: r.URL.Path}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &m) != nil {
			t.Errorf("response_url got %s %s %q", r.Method, r.Header.Get("Content-Type"), b)
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	t.Cleanup(fake.Close)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "workflows", "slack.yaml"), slackE2EWorkflow)
	addr := freeAddr(t)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
allow_repos: ["myorg/*"]
slack: { signing_secret: "${SLACK_SECRET}", response_url_prefix: "`+fake.URL+`/" }
shutdown_grace: 5s
`)
	p := startHookrun(t, "serve", []string{"SLACK_SECRET=" + secret}, "serve", "--config", cfg, "--log-level", "debug")
	base := "http://" + addr
	waitReady(t, p, base, 60*time.Second)

	command := func(responseURL string) (int, time.Duration, map[string]any) {
		form := url.Values{"team_id": {"T1"}, "user_id": {"U111"}, "user_name": {"alice"}, "channel_id": {"C222"},
			"channel_name": {"ops"}, "command": {"/hookrun"}, "text": {"deploy staging"},
			"response_url": {responseURL}, "trigger_id": {"trig-" + strconv.Itoa(len(responseURL))}}
		body := form.Encode()
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte("v0:" + ts + ":" + body))
		req, _ := http.NewRequest(http.MethodPost, base+"/hooks/slack", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		elapsed := time.Since(start)
		var ans map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, elapsed, ans
	}

	code, elapsed, ans := command(fake.URL + "/commands/T1/1/abc")
	runs, _ := ans["runs"].([]any)
	if code != http.StatusOK || ans["response_type"] != "ephemeral" || len(runs) != 1 {
		t.Fatalf("answer %d %v, want 200 ephemeral with one run", code, ans)
	}
	if elapsed > 3*time.Second {
		t.Errorf("acknowledged in %v, past Slack's 3 s", elapsed)
	}
	t.Logf("acknowledged in %v: %v", elapsed, ans["text"])
	runID, _ := runs[0].(map[string]any)["id"].(string)
	if !strings.Contains(ans["text"].(string), "Queued run "+runID+" of slack-e2e on myorg/app.") {
		t.Errorf("answer text %q", ans["text"])
	}

	waitFor(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	mu.Lock()
	msgs := append([]slackMessage(nil), got...)
	mu.Unlock()
	want := ":white_check_mark: slack-e2e: Succeeded (run " + runID + ") on myorg/app (/hookrun deploy staging)\n" +
		"deployed staging by alice from myorg/app"
	if len(msgs) != 1 || msgs[0].Path != "/commands/T1/1/abc" || msgs[0].ResponseType != "in_channel" || msgs[0].Text != want {
		t.Errorf("response_url got %+v, want one in_channel message %q", msgs, want)
	}

	// A signed command whose response_url is not under the prefix.
	code, _, ans = command("https://evil.example/collect")
	if runs, _ := ans["runs"].([]any); code != http.StatusOK || len(runs) != 0 || !strings.Contains(ans["text"].(string), "runs nothing") {
		t.Errorf("elsewhere: %d %v, want 200 and no run", code, ans)
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	if len(got) != 1 {
		t.Errorf("%d messages, want still 1", len(got))
	}
	mu.Unlock()
}
