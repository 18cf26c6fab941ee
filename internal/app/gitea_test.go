package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// A server with github: and gitea: side by side gives each forge's events
// to its own client with its own token: a Gitea run is reported on Gitea's
// API with "token <gitea token>" and cloned with the Gitea token, never the
// GitHub one; ingress gets Gitea's permission and head lookups; the Gitea
// token and webhook secrets are masked in runs.
func TestGiteaBesideGitHub(t *testing.T) {
	var mu sync.Mutex
	var giteaAuth []string
	gt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		giteaAuth = append(giteaAuth, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/statuses/"+strings.Repeat("b", 40)):
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":1,"status":"pending"}`)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer gt.Close()
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("github reached with %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer gh.Close()

	cfg := &Config{
		GitHub: GitHubConfig{Token: "gh-token-1", APIURL: gh.URL + "/api/v3/"},
		Gitea:  GiteaConfig{Token: "gt-token-2", BaseURL: gt.URL + "/", WebhookSecret: "gt-secret-3", WebhookSecrets: []string{"gt-secret-4"}},
	}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	f, err := NewForges(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if f.Registry.Get(workflows.Forge("gitea")).Credentials() != nil || f.GitHub == nil {
		t.Fatalf("forges %+v", f)
	}
	if !f.Registry.Has(workflows.Forge("gitea")) {
		t.Errorf("the registry lacks gitea: %v", f.Registry.Names())
	}

	ev := &workflows.Event{Forge: workflows.Forge("gitea"), Kind: workflows.KindPush, Repo: "alice/demo",
		Push: &workflows.Push{Ref: "refs/heads/main", Branch: "main", After: strings.Repeat("b", 40)}}
	wf := &workflows.Workflow{Name: "build", Report: workflows.Report{Comment: workflows.CommentNone, Status: true}}
	if _, err := f.Report(context.Background(), &contract.RunReport{RunID: "r1", Workflow: wf, Event: ev, Phase: contract.PhaseStart,
		Status: workflows.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(giteaAuth) != 1 || giteaAuth[0] != "POST /api/v1/repos/alice/demo/statuses/"+strings.Repeat("b", 40)+" token gt-token-2" {
		t.Errorf("gitea requests %q", giteaAuth)
	}
	mu.Unlock()

	auth := gitAuth(f.Registry)
	if _, tok, err := auth(context.Background(), ev); err != nil || tok != "gt-token-2" {
		t.Errorf("gitea clone token %q, %v", tok, err)
	}
	if _, tok, _ := auth(context.Background(), &workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r"}); tok != "gh-token-1" {
		t.Errorf("github clone token %q", tok)
	}
	masked := serverCredentials(cfg)
	for _, s := range []string{"gt-token-2", "gt-secret-3", "gt-secret-4"} {
		if !slices.Contains(masked, s) {
			t.Errorf("%s is not masked in runs", s)
		}
	}
}

// A gitea token without base_url (there is no default Gitea) is refused
// by name.
func TestGiteaConfigNeedsBaseURL(t *testing.T) {
	cfg := &Config{Gitea: GiteaConfig{Token: "t"}}
	cfg.SetDefaults()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "gitea.base_url") {
		t.Fatalf("Validate: %v", err)
	}
}
