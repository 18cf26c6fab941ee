package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/gitea"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/providers/slack"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/telemetry"
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
// (their default hosts), Gitea with a base_url (without a memory of the
// labels it saw: see newForges).
func NewForges(cfg *Config, logger *slog.Logger) (*Forges, error) {
	return newForges(cfg, logger, nil)
}

// newForges is NewForges with the memory of the labels ingress saw last on
// each issue and pull request (stores.LabelStore), which tells Gitea's
// label_updated deliveries that add a label from those that remove one;
// nil where nothing is normalized (a runner, recovery).
func newForges(cfg *Config, logger *slog.Logger, labels gitea.LabelMemory) (*Forges, error) {
	f := Forges{Registry: forge.NewRegistry()}
	gc := github.Config{APIURL: cfg.GitHub.APIURL, Token: cfg.GitHub.Token, AppID: cfg.GitHub.AppID, RunURL: cfg.RunURL,
		Client: forge.Client{Logger: logger, WrapTransport: tracedTransport(cfg, "github")}, Webhook: forge.Webhook{WebhookEnabled: cfg.GitHubEnabled(), WebhookSecrets: cfg.GitHubSecrets()}}
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
	gl, err := gitlab.NewForge(gitlab.Config{BaseURL: cfg.GitLab.BaseURL, Token: cfg.GitLab.Token, RunURL: cfg.RunURL,
		Client: forge.Client{Logger: logger, WrapTransport: tracedTransport(cfg, "gitlab")}, Webhook: forge.Webhook{WebhookEnabled: cfg.GitLabEnabled(), WebhookSecrets: cfg.GitLabTokens()}})
	if err != nil {
		return nil, err
	}
	f.Registry.Register(gl)
	if cfg.Gitea.BaseURL != "" {
		// Gitea's API is GitHub's client speaking Gitea's dialect.
		api := func(apiURL, token string) (gitea.API, error) {
			return github.New(github.Config{Forge: gitea.Name, Dialect: gitea.Dialect(), APIURL: apiURL, Token: token, RunURL: cfg.RunURL,
				Client: forge.Client{Logger: logger, WrapTransport: tracedTransport(cfg, "gitea")}})
		}
		gt, err := gitea.NewForge(gitea.Config{BaseURL: cfg.Gitea.BaseURL, Token: cfg.Gitea.Token, API: api,
			Webhook: forge.Webhook{WebhookEnabled: cfg.GiteaEnabled(), WebhookSecrets: cfg.GiteaSecrets()}, Labels: labels})
		if err != nil {
			return nil, err
		}
		f.Registry.Register(gt)
	}
	slc := cfg.slackReporterConfig()
	slc.Logger = logger
	sl, err := slack.New(slc)
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

var _ gitea.LabelMemory = (*stores.LabelStore)(nil)

// giteaLabels is the label memory of Gitea's deliveries: the
// hookrun_labels bucket (stores.LabelStore) when this process normalizes Gitea's webhooks,
// else nil.
func giteaLabels(ctx context.Context, cfg *Config, m Mode, st *stores.Stores) (gitea.LabelMemory, error) {
	if !m.Ingress || !cfg.GiteaEnabled() {
		return nil, nil
	}
	s, err := st.Labels(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening the gitea label memory: %w", err)
	}
	return s, nil
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
// forge (it has no pull request to comment on, no commit status to set),
// its actions refused (chatActions); any other to its event's forge,
// which does nothing without credentials.
func (f *Forges) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	if isChat(r) && r.AsksActions() {
		r.Acted = contract.RefuseActions(r, chatActions)
	}
	for _, rep := range f.reporters {
		if rep.Applies(r) {
			return rep.Report(ctx, r)
		}
	}
	return r.Ref, nil
}

// chatActions is why a chat run's actions are refused: its report goes to
// the chat alone, and its actions to no forge, also those that name
// targets on the trigger's repository (a schedule or a comment command
// acts there).
const chatActions = "a chat command's run does not act on issues or pull requests: its result goes to the chat alone"

// ApplyActions applies the actions of a final report whose comment and
// status are a newer run's (contract.ActionApplier): on the event's forge
// (forge.Act), without reporting; a chat run's are refused.
func (f *Forges) ApplyActions(ctx context.Context, r *contract.RunReport) error {
	if isChat(r) {
		r.Acted = contract.RefuseActions(r, chatActions)
		return nil
	}
	return forge.Act(ctx, f.Registry.Get(r.Event.Forge), r)
}

func isChat(r *contract.RunReport) bool { return r.Event != nil && r.Event.Kind == workflows.KindChat }

// chatElsewhere takes the reports of chat runs of a platform hookrun has
// no reporter for: nothing to report to.
type chatElsewhere struct{}

func (chatElsewhere) Applies(r *contract.RunReport) bool { return isChat(r) }

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
	_ contract.Reporter      = (*Forges)(nil)
	_ contract.ActionApplier = (*Forges)(nil)
	_ contract.DraftOpener   = (*Forges)(nil)
)
