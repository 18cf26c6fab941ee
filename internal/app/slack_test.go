package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// TestForgesReportChatGoesToSlack: a chat run's final report reaches its
// response_url and never the forge of its repository (which would get a
// commit status on the commit checked out); a forge event's still goes to
// the forge.
func TestForgesReportChatGoesToSlack(t *testing.T) {
	var (
		mu            sync.Mutex
		slackHits     []string
		forgeRequests []string
	)
	slackSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		slackHits = append(slackHits, r.URL.Path+" "+m["text"].(string))
		mu.Unlock()
	}))
	t.Cleanup(slackSrv.Close)
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		forgeRequests = append(forgeRequests, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id": 1}`))
	}))
	t.Cleanup(gh.Close)

	cfg := &Config{GitHub: GitHubConfig{Token: "t", APIURL: gh.URL + "/"}, Slack: SlackConfig{ResponseURLPrefix: slackSrv.URL + "/"}}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	f, err := NewForges(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	wf := &workflows.Workflow{Name: "slack-deploy", Report: workflows.Report{Comment: workflows.CommentSticky, Status: true}}
	chat := &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindChat, Repo: "myorg/app",
		Chat: &workflows.Chat{Platform: workflows.ChatSlack, UserID: "U1", ChannelID: "C1", Command: "/hookrun", Text: "deploy",
			ResponseURL: slackSrv.URL + "/commands/1"}}
	sha := strings.Repeat("a", 40)
	for _, p := range []contract.Phase{contract.PhaseStart, contract.PhaseFinal} {
		if _, err := f.Report(context.Background(), &contract.RunReport{Phase: p, RunID: "01R", Workflow: wf, Event: chat,
			HeadSHA: sha, Status: workflows.StatusSucceeded}); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	outside := *chat
	outside.Chat = &workflows.Chat{Platform: workflows.ChatSlack, ResponseURL: "https://hooks.slack.com.evil.example/x"}
	if _, err := f.Report(context.Background(), &contract.RunReport{Phase: contract.PhaseFinal, RunID: "01S", Workflow: wf,
		Event: &outside, HeadSHA: sha, Status: workflows.StatusSucceeded}); !errors.Is(err, contract.ErrRefused) {
		t.Errorf("a response_url outside the prefix: err %v, want a refusal", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(slackHits) != 1 || !strings.HasPrefix(slackHits[0], "/commands/1 :white_check_mark: slack-deploy: Succeeded (run 01R) on myorg/app") {
		t.Errorf("response_url got %q, want the final result once", slackHits)
	}
	if len(forgeRequests) != 0 {
		t.Errorf("the forge got %v for a chat run", forgeRequests)
	}
}

func TestSlackConfigValidate(t *testing.T) {
	on := true
	for name, c := range map[string]SlackConfig{
		"enabled without a secret": {Enabled: &on},
		"a command without /":      {Command: "hookrun"},
		"an unknown response type": {ResponseType: "channel"},
		"a prefix without /":       {ResponseURLPrefix: "https://hooks.slack.com"},
	} {
		cfg := &Config{Slack: c}
		cfg.SetDefaults()
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "slack") {
			t.Errorf("%s: err %v, want one naming slack", name, err)
		}
	}
	cfg := &Config{Slack: SlackConfig{Enabled: &on, SigningSecrets: []string{"old"}}}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Errorf("a rotation secret alone: %v", err)
	}
	if got := serverCredentials(&Config{Slack: SlackConfig{SigningSecret: "s1", SigningSecrets: []string{"s2"}}}); !strings.Contains(strings.Join(got, ","), "s1,s2") {
		t.Errorf("redacted credentials %q lack the signing secrets", got)
	}
}
