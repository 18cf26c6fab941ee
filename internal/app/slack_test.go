package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
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

// TestForgesRefuseAChatRunsActions: a chat run's actions, also those
// naming targets on the trigger's repository, are refused with the
// reason, listed in the report (the run record takes r.Acted) and in the
// Slack message, and never reach the forge; the same when only its
// actions are applied (a superseded report).
func TestForgesRefuseAChatRunsActions(t *testing.T) {
	var (
		mu            sync.Mutex
		slackTexts    []string
		forgeRequests []string
	)
	slackSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ResponseType    string `json:"response_type"`
			Text            string `json:"text"`
			ReplaceOriginal bool   `json:"replace_original"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil || r.Method != http.MethodPost || r.URL.Path != "/commands/1" {
			t.Errorf("slack got %s %s (%v)", r.Method, r.URL.Path, err)
		}
		mu.Lock()
		slackTexts = append(slackTexts, m.Text)
		mu.Unlock()
	}))
	t.Cleanup(slackSrv.Close)
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		forgeRequests = append(forgeRequests, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
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
	wf := &workflows.Workflow{Name: "slack-triage", Permissions: &workflows.Permissions{Labels: []string{"bug"}, Targets: true}}
	chat := &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindChat, Repo: "myorg/app",
		Chat: &workflows.Chat{Platform: workflows.ChatSlack, UserID: "U1", ChannelID: "C1", Command: "/hookrun", Text: "triage",
			ResponseURL: slackSrv.URL + "/commands/1"}}
	acts := &contract.Actions{ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug"}}},
		Targets: []contract.TargetActions{{Number: 3, ActionSet: contract.ActionSet{Labels: &contract.AddRemove{Add: []string{"bug"}}}}}}
	want := &contract.ActionsOutcome{Refused: []contract.ActionNote{
		{What: `add label "bug" to the event's issue`, Reason: "the event has no issue or pull request: name targets"},
		{What: `add label "bug" to #3`, Reason: chatActions},
	}}
	report := func() *contract.RunReport {
		return &contract.RunReport{Phase: contract.PhaseFinal, RunID: "01R", Workflow: wf, Event: chat,
			Status: workflows.StatusSucceeded, Results: &contract.Results{Actions: acts}}
	}
	r := report()
	if _, err := f.Report(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Acted, want) {
		t.Errorf("report: acted %+v, want %+v", r.Acted, want)
	}
	r = report()
	if err := f.ApplyActions(context.Background(), r); err != nil || !reflect.DeepEqual(r.Acted, want) {
		t.Errorf("actions alone: acted %+v (%v), want %+v", r.Acted, err, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(forgeRequests) != 0 {
		t.Errorf("the forge got %v for a chat run's actions", forgeRequests)
	}
	wantLine := "\nRefused: add label \"bug\" to #3: " + chatActions
	if len(slackTexts) != 1 || !strings.Contains(slackTexts[0], wantLine) {
		t.Errorf("slack got %q, want one message with %q", slackTexts, wantLine)
	}
}
