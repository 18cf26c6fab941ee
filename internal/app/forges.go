package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/hookrun/hookrun/internal/telemetry"
	"github.com/hookrun/hookrun/providers/gitea"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/providers/slack"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Forges are the API clients of the configured forges, one per forge: the
// runner reports and clones with them, ingress asks them what payloads
// leave out (Trust). A forge without API credentials has none.
type Forges struct {
	GitHub *github.Reporter // nil without github.token or github.app_id
	GitLab *gitlab.Reporter // nil without gitlab.token
	Gitea  *gitea.Reporter  // nil without gitea.token
	// Slack posts chat runs' results to their response_url; it needs no
	// credentials, so every runner has one (whichever ingress took the
	// command).
	Slack *slack.Reporter
}

// NewForges builds the client of each forge cfg has credentials for.
func NewForges(cfg *Config, logger *slog.Logger) (*Forges, error) {
	var f Forges
	if cfg.GitHub.Token != "" || cfg.GitHub.AppID != 0 {
		gc := github.Config{APIURL: cfg.GitHub.APIURL, Token: cfg.GitHub.Token, AppID: cfg.GitHub.AppID, RunURL: cfg.RunURL, Logger: logger,
			WrapTransport: tracedTransport(cfg, "github")}
		if cfg.GitHub.PrivateKeyFile != "" {
			key, err := os.ReadFile(cfg.GitHub.PrivateKeyFile)
			if err != nil {
				return nil, fmt.Errorf("github.private_key_file: reading: %w", err)
			}
			gc.PrivateKey = key
		}
		rep, err := github.New(gc)
		if err != nil {
			return nil, fmt.Errorf("configuring github reporter: %w", err)
		}
		f.GitHub = rep
	}
	if cfg.GitLab.Token != "" {
		rep, err := gitlab.New(gitlab.Config{BaseURL: cfg.GitLab.BaseURL, Token: cfg.GitLab.Token, RunURL: cfg.RunURL, Logger: logger,
			WrapTransport: tracedTransport(cfg, "gitlab")})
		if err != nil {
			return nil, fmt.Errorf("configuring gitlab reporter: %w", err)
		}
		f.GitLab = rep
	}
	if cfg.Gitea.Token != "" {
		rep, err := gitea.New(gitea.Config{BaseURL: cfg.Gitea.BaseURL, Token: cfg.Gitea.Token, RunURL: cfg.RunURL, Logger: logger,
			WrapTransport: tracedTransport(cfg, "gitea")})
		if err != nil {
			return nil, fmt.Errorf("configuring gitea reporter: %w", err)
		}
		f.Gitea = rep
	}
	sl, err := slack.New(slack.Config{ResponseURLPrefix: cfg.Slack.ResponseURLPrefix, ResponseType: cfg.Slack.ResponseType,
		RunURL: cfg.RunURL, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("configuring slack reporter: %w", err)
	}
	f.Slack = sl
	if f.GitHub == nil && f.GitLab == nil && f.Gitea == nil {
		logger.Warn("no forge token configured: runs are not reported on pull requests")
	}
	return &f, nil
}

// tracedTransport gives each API call of a forge's client a span
// (telemetry.Transport) when tracing is on; nil otherwise.
func tracedTransport(cfg *Config, forge string) func(http.RoundTripper) http.RoundTripper {
	if cfg.Tracing == nil || !cfg.Tracing.Enabled {
		return nil
	}
	tp := cfg.Tracing.Provider
	return func(base http.RoundTripper) http.RoundTripper { return telemetry.Transport(base, tp, forge) }
}

// Report sends a run's report to the reporter of its event's forge; a
// chat run's goes to where the command was typed, and never to the forge
// (it has no pull request to comment on, no commit status to set).
func (f *Forges) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	switch {
	case slack.Handles(r):
		if f.Slack == nil {
			return r.Ref, nil
		}
		return f.Slack.Report(ctx, r)
	case r.Event != nil && r.Event.Kind == workflows.KindChat:
		return r.Ref, nil // a chat platform hookrun does not know: nothing to report to
	case r.Event.Forge == workflows.GitHub && f.GitHub != nil:
		return f.GitHub.Report(ctx, r)
	case r.Event.Forge == workflows.GitLab && f.GitLab != nil:
		return f.GitLab.Report(ctx, r)
	case r.Event.Forge == workflows.Gitea && f.Gitea != nil:
		return f.Gitea.Report(ctx, r)
	}
	return r.Ref, nil // no credentials for this forge: nothing to report to
}

// OpenDraft opens a draft pull/merge request with the client of the
// event's forge.
func (f *Forges) OpenDraft(ctx context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error) {
	switch {
	case req.Event == nil:
	case req.Event.Forge == workflows.GitHub && f.GitHub != nil:
		return f.GitHub.OpenDraft(ctx, req)
	case req.Event.Forge == workflows.GitLab && f.GitLab != nil:
		return f.GitLab.OpenDraft(ctx, req)
	case req.Event.Forge == workflows.Gitea && f.Gitea != nil:
		return f.Gitea.OpenDraft(ctx, req)
	}
	return workflows.ChangeRequest{}, errors.New("opening a draft pull request: no API credentials for this forge")
}

var (
	_ contract.Reporter    = (*Forges)(nil)
	_ contract.DraftOpener = (*Forges)(nil)
)
