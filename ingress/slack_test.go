package ingress

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

const (
	testSlackSecret    = "slack-signing-secret-value"
	testSlackOldSecret = "slack-old-signing-secret-value"
)

const slackWorkflow = `name: slack-deploy
on:
  - event: chat
    command: deploy
    repo: myorg/app
authorize:
  slack_users: [U111]
  slack_channels: [C222]
steps:
  - id: deploy
    run: echo "$HOOKRUN_COMMAND_ARGS"
`

const slackElsewhereWorkflow = `name: elsewhere
on:
  - event: chat
    command: deploy
    repo: other/app
    forge: gitlab
authorize:
  slack_users: [U111]
  slack_channels: [C222]
steps:
  - id: deploy
    run: "true"
`

// slackSign is Slack's v0 signature of body at timestamp ts.
func slackSign(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// slashCommand is the form Slack posts for `/hookrun <text>`.
func slashCommand(user, channel, text string) url.Values {
	return url.Values{
		"token":        {"deprecated-verification-token"},
		"team_id":      {"T0001"},
		"team_domain":  {"example"},
		"channel_id":   {channel},
		"channel_name": {"ops"},
		"user_id":      {user},
		"user_name":    {"alice"},
		"command":      {"/hookrun"},
		"text":         {text},
		"api_app_id":   {"A0001"},
		"response_url": {"https://hooks.slack.com/commands/T0001/1234/abcd"},
		"trigger_id":   {"13345224609.738474920.8088930838d88f008e0"},
	}
}

type slackReply struct {
	Code         int
	Raw          string
	Elapsed      time.Duration
	ResponseType string   `json:"response_type"`
	Text         string   `json:"text"`
	Delivery     string   `json:"delivery"`
	Runs         []runRef `json:"runs"`
	Error        string   `json:"error"`
}

// slack posts form signed with secret at ts (now when zero).
func (e *testEnv) slack(t testing.TB, secret string, ts time.Time, form url.Values) slackReply {
	t.Helper()
	if ts.IsZero() {
		ts = time.Now()
	}
	body := []byte(form.Encode())
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, e.http.URL+"/hooks/slack", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(headerSlackTimestamp, stamp)
	req.Header.Set(headerSlackSignature, slackSign(secret, stamp, body))
	start := time.Now()
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := slackReply{Code: resp.StatusCode, Raw: string(raw), Elapsed: time.Since(start)}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, raw)
	}
	return r
}

func TestVerifySlack(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte("command=%2Fhookrun&text=deploy")
	secrets := [][]byte{[]byte(testSlackSecret), []byte(testSlackOldSecret)}
	ts := strconv.FormatInt(now.Unix(), 10)
	good := slackSign(testSlackSecret, ts, body)
	for _, c := range []struct {
		name    string
		ts, sig string
		body    []byte
		ok      bool
	}{
		{"good", ts, good, body, true},
		{"rotation: the old secret", ts, slackSign(testSlackOldSecret, ts, body), body, true},
		{"another secret", ts, slackSign("nope", ts, body), body, false},
		{"body changed", ts, good, append(body, '&'), false},
		{"timestamp changed", strconv.FormatInt(now.Unix()-1, 10), good, body, false},
		{"stale: 5m01s old", strconv.FormatInt(now.Add(-5*time.Minute-time.Second).Unix(), 10),
			slackSign(testSlackSecret, strconv.FormatInt(now.Add(-5*time.Minute-time.Second).Unix(), 10), body), body, false},
		{"4m59s old", strconv.FormatInt(now.Add(-4*time.Minute-59*time.Second).Unix(), 10),
			slackSign(testSlackSecret, strconv.FormatInt(now.Add(-4*time.Minute-59*time.Second).Unix(), 10), body), body, true},
		{"from the future", strconv.FormatInt(now.Add(6*time.Minute).Unix(), 10),
			slackSign(testSlackSecret, strconv.FormatInt(now.Add(6*time.Minute).Unix(), 10), body), body, false},
		{"no timestamp", "", good, body, false},
		{"not a number", "12ab", good, body, false},
		{"no v0=", ts, strings.TrimPrefix(good, "v0="), body, false},
		{"v1", ts, "v1=" + strings.TrimPrefix(good, "v0="), body, false},
		{"short", ts, good[:20], body, false},
		{"no signature", ts, "", body, false},
	} {
		if got := verifySlack(secrets, c.ts, c.sig, c.body, now); got != c.ok {
			t.Errorf("%s: verified %v, want %v", c.name, got, c.ok)
		}
	}
	if verifySlack(nil, ts, good, body, now) {
		t.Error("verified without any secret")
	}
}

func slackEnv(t *testing.T, files map[string]string) *testEnv {
	t.Helper()
	return newEnv(t, Config{
		// No Origins: the forges' own GitOrigin, as internal/app leaves them.
		Slack:      SlackConfig{Enabled: true, Secrets: []string{testSlackSecret, testSlackOldSecret}},
		AllowRepos: []string{"myorg/*"},
	}, files)
}

func TestSlackNotConfigured(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{"a.yaml": slackWorkflow})
	if r := env.slack(t, testSlackSecret, time.Time{}, slashCommand("U111", "C222", "deploy staging")); r.Code != http.StatusNotFound {
		t.Fatalf("code %d, want 404: %s", r.Code, r.Raw)
	}
	if _, err := New(Config{Slack: SlackConfig{Enabled: true}}, testDeps(env.q, env.srv.src, nil)); err == nil {
		t.Error("slack enabled without a signing secret was accepted")
	}
}

func TestSlackRefusesUnsigned(t *testing.T) {
	env := slackEnv(t, map[string]string{"a.yaml": slackWorkflow})
	form := slashCommand("U111", "C222", "deploy staging")
	for name, r := range map[string]slackReply{
		"bad signature":   env.slack(t, "not-the-secret", time.Time{}, form),
		"stale timestamp": env.slack(t, testSlackSecret, time.Now().Add(-6*time.Minute), form),
	} {
		if r.Code != http.StatusUnauthorized || r.Error != "unauthorized" {
			t.Errorf("%s: %d %s, want 401 unauthorized", name, r.Code, r.Raw)
		}
	}
	if n := len(streamRunIDs(t, env.q)); n != 0 {
		t.Errorf("%d runs published for unverified commands", n)
	}
	if strings.Contains(env.logs.String(), testSlackSecret) {
		t.Error("the signing secret was logged")
	}
}

func TestSlackCommandQueuesRun(t *testing.T) {
	env := slackEnv(t, map[string]string{"a.yaml": slackWorkflow, "b.yaml": reviewWorkflow})
	r := env.slack(t, testSlackSecret, time.Time{}, slashCommand("U111", "C222", "deploy  staging"))
	if r.Code != http.StatusOK || r.ResponseType != "ephemeral" || len(r.Runs) != 1 {
		t.Fatalf("answer %d %s, want 200, ephemeral, one run", r.Code, r.Raw)
	}
	if r.Elapsed > 3*time.Second {
		t.Errorf("answered in %v, past Slack's 3 s", r.Elapsed)
	}
	t.Logf("acknowledged in %v", r.Elapsed)
	mustContain(t, r.Text, "Queued run "+r.Runs[0].ID+" of slack-deploy on myorg/app.")
	reqs := streamRequests(t, env.q)
	if len(reqs) != 1 || reqs[0].ID != r.Runs[0].ID || reqs[0].Workflow != "slack-deploy" {
		t.Fatalf("stream holds %+v, want the answered run", reqs)
	}
	ev := reqs[0].Event
	ev.Raw = nil
	got, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/golden/slack/command.event.json", append(got, '\n'))
	if strings.Contains(r.Raw, testSlackSecret) || strings.Contains(env.logs.String(), testSlackSecret) {
		t.Error("the signing secret was echoed or logged")
	}

	// The same invocation again (a replay inside the window): the same run.
	again := env.slack(t, testSlackOldSecret, time.Time{}, slashCommand("U111", "C222", "deploy  staging"))
	if again.Code != http.StatusOK || len(again.Runs) != 1 || again.Runs[0].ID != r.Runs[0].ID {
		t.Errorf("replayed command: %s, want run %s again", again.Raw, r.Runs[0].ID)
	}
	if n := len(streamRunIDs(t, env.q)); n != 1 {
		t.Errorf("%d runs after a replay, want 1", n)
	}
}

func TestSlackCommandRunsNothing(t *testing.T) {
	env := slackEnv(t, map[string]string{"a.yaml": slackWorkflow, "b.yaml": slackElsewhereWorkflow, "c.yaml": reviewWorkflow})
	outside := slashCommand("U111", "C222", "deploy staging")
	outside.Set("response_url", "https://evil.example/collect")
	other := slashCommand("U111", "C222", "deploy staging")
	other.Set("command", "/other")
	for _, c := range []struct {
		name string
		form url.Values
		want []string
	}{
		{"user not allowed", slashCommand("U999", "C222", "deploy staging"),
			[]string{"slack-deploy: Slack user U999 is not in authorize.slack_users", "elsewhere: repository other/app is not in the server's allow_repos"}},
		{"channel not allowed", slashCommand("U111", "C999", "deploy staging"), []string{"Slack channel C999 is not in authorize.slack_channels"}},
		{"unknown command word", slashCommand("U111", "C222", "destroy <!channel>"),
			[]string{"Nothing runs for `/hookrun destroy &lt;!channel&gt;`", "the chat command is not deploy"}},
		{"response_url elsewhere", outside, []string{"runs nothing for this command: its response URL is not under https://hooks.slack.com/"}},
		{"another slash command", other, []string{"hookrun answers /hookrun, not /other"}},
		{"help", slashCommand("U111", "C222", ""), []string{"Usage: /hookrun <command> [arguments]. Commands: deploy."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := env.slack(t, testSlackSecret, time.Time{}, c.form)
			if r.Code != http.StatusOK || r.ResponseType != "ephemeral" || len(r.Runs) != 0 {
				t.Fatalf("answer %d %s, want 200, ephemeral, no run", r.Code, r.Raw)
			}
			for _, w := range c.want {
				mustContain(t, r.Text, w)
			}
			if strings.Contains(r.Text, "review") {
				t.Errorf("the answer names a workflow that takes no chat commands: %s", r.Text)
			}
		})
	}
	if n := len(streamRunIDs(t, env.q)); n != 0 {
		t.Errorf("%d runs published, want none", n)
	}
}

func TestSlackMalformed(t *testing.T) {
	env := slackEnv(t, map[string]string{"a.yaml": slackWorkflow})
	form := slashCommand("U111", "C222", "deploy")
	form.Del("user_id")
	if r := env.slack(t, testSlackSecret, time.Time{}, form); r.Code != http.StatusBadRequest {
		t.Errorf("no user_id: %d %s, want 400", r.Code, r.Raw)
	}
	big := slashCommand("U111", "C222", strings.Repeat("x", DefaultSlackMaxBodyBytes))
	if r := env.slack(t, testSlackSecret, time.Time{}, big); r.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized: %d, want 413", r.Code)
	}
}

func TestNormalizeSlackKeepsIDs(t *testing.T) {
	ev, err := normalizeSlack([]byte(slashCommand("U111", "C222", " deploy staging ").Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != workflows.KindChat || ev.Forge != "" || ev.Repo != "" || ev.Chat.Text != "deploy staging" ||
		ev.DeliveryID != "slack-T0001-13345224609.738474920.8088930838d88f008e0" {
		t.Errorf("event %+v chat %+v", ev, ev.Chat)
	}
}

// checkGolden compares got with a golden file, or rewrites it with -update.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n--- got\n%s--- want\n%s", golden, got, want)
	}
}
