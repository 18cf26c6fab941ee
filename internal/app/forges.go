package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/hookrun/hookrun/internal/telemetry"
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/gitea"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/providers/slack"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Forges are the configured forges (providers/forge), one registration
// each, and the reporters a run's report may go to: the runner reports
// and clones with them, ingress asks them what payloads leave out
// (Trust, Files). A forge without API credentials is registered all the
// same (its git origin is known); its lookups answer
// forge.ErrNoCredentials and its reports do nothing.
type Forges struct {
	// Registry holds the forges by name; Get never returns nil.
	Registry *forge.Registry
	// GitHub is GitHub's API client, for webhook redelivery (recovery);
	// nil without github.token or github.app_id.
	GitHub *github.Reporter
	// Slack posts chat runs' results to their response_url; it needs no
	// credentials, so every runner has one (whichever ingress took the
	// command).
	Slack *slack.Reporter
	// reporters take each report in turn; the first that applies gets it.
	reporters []applyingReporter
}

// applyingReporter is a reporter that decides itself whether a report is
// its to send (prow crier's ShouldReport).
type applyingReporter interface {
	contract.Reporter
	Applies(r *contract.RunReport) bool
}

// NewForges builds every forge cfg configures: GitHub and GitLab always
// (their default hosts), Gitea with a base_url.
func NewForges(cfg *Config, logger *slog.Logger) (*Forges, error) {
	f := Forges{Registry: forge.NewRegistry()}
	gc := github.Config{APIURL: cfg.GitHub.APIURL, Token: cfg.GitHub.Token, AppID: cfg.GitHub.AppID, RunURL: cfg.RunURL, Logger: logger,
		WrapTransport: tracedTransport(cfg, "github"), WebhookEnabled: cfg.GitHubEnabled(), WebhookSecrets: cfg.GitHubSecrets()}
	if cfg.GitHub.PrivateKeyFile != "" {
		key, err := os.ReadFile(cfg.GitHub.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("github.private_key_file: reading: %w", err)
		}
		gc.PrivateKey = key
	}
	gh, err := github.NewForge(gc)
	if err != nil {
		return nil, err
	}
	f.Registry.Register(gh)
	f.GitHub = gh.Reporter()
	gl, err := gitlab.NewForge(gitlab.Config{BaseURL: cfg.GitLab.BaseURL, Token: cfg.GitLab.Token, RunURL: cfg.RunURL, Logger: logger,
		WrapTransport: tracedTransport(cfg, "gitlab"), WebhookEnabled: cfg.GitLabEnabled(), WebhookTokens: cfg.GitLabTokens()})
	if err != nil {
		return nil, err
	}
	f.Registry.Register(gl)
	if cfg.Gitea.BaseURL != "" {
		gt, err := gitea.NewForge(gitea.Config{BaseURL: cfg.Gitea.BaseURL, Token: cfg.Gitea.Token, RunURL: cfg.RunURL, Logger: logger,
			WrapTransport: tracedTransport(cfg, "gitea"), WebhookEnabled: cfg.GiteaEnabled(), WebhookSecrets: cfg.GiteaSecrets()})
		if err != nil {
			return nil, err
		}
		f.Registry.Register(gt)
	}
	sl, err := slack.New(slack.Config{ResponseURLPrefix: cfg.Slack.ResponseURLPrefix, ResponseType: cfg.Slack.ResponseType,
		RunURL: cfg.RunURL, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("configuring slack reporter: %w", err)
	}
	f.Slack = sl
	f.reporters = []applyingReporter{sl, chatElsewhere{}, forgeReporter{f.Registry}}
	credentialed := false
	for _, n := range f.Registry.Names() {
		credentialed = credentialed || f.Registry.Get(n).Credentials() == nil
	}
	if !credentialed {
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

// Report sends a run's report to the first reporter that applies: a
// chat run's goes to where the command was typed (Slack) and never to the
// forge (it has no pull request to comment on, no commit status to set);
// any other to its event's forge, which does nothing without credentials.
func (f *Forges) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	for _, rep := range f.reporters {
		if rep.Applies(r) {
			return rep.Report(ctx, r)
		}
	}
	return r.Ref, nil
}

// chatElsewhere takes the reports of chat runs of a platform hookrun has
// no reporter for: nothing to report to.
type chatElsewhere struct{}

func (chatElsewhere) Applies(r *contract.RunReport) bool {
	return r.Event != nil && r.Event.Kind == workflows.KindChat
}

func (chatElsewhere) Report(_ context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	return r.Ref, nil
}

// forgeReporter reports on the event's forge.
type forgeReporter struct{ reg *forge.Registry }

func (forgeReporter) Applies(r *contract.RunReport) bool { return r.Event != nil }

// Report applies a final report's actions (forge.Report) and reports it.
func (fr forgeReporter) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	return forge.Report(ctx, fr.reg.Get(r.Event.Forge), r)
}

// OpenDraft opens a draft pull/merge request on the event's forge.
func (f *Forges) OpenDraft(ctx context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error) {
	if req.Event == nil {
		return workflows.ChangeRequest{}, errors.New("opening a draft pull request: no event")
	}
	return f.Registry.Get(req.Event.Forge).OpenDraft(ctx, req)
}

var (
	_ contract.Reporter    = (*Forges)(nil)
	_ contract.DraftOpener = (*Forges)(nil)
)
