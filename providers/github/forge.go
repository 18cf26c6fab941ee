package github

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Name is the forge this package implements: Event.Forge of GitHub's
// events, the github configuration section, POST /hooks/github.
const Name = workflows.GitHub

// Forge is GitHub as hookrun uses it (providers/forge.Forge): its API
// client when it has a token or an App, and the git origin of its
// api_url, which it has either way.
type Forge struct {
	// Actor is the Reporter's, guarded: forge.ErrNoCredentials without
	// credentials (actions.go).
	forge.Actor

	rep    *Reporter // nil without credentials
	origin string
	hook   hook // webhook.go
}

// NewForge builds GitHub from cfg. Without a token or an App its API
// methods answer forge.ErrNoCredentials and Report does nothing.
func NewForge(cfg Config) (*Forge, error) {
	origin, err := GitOrigin(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	h, err := newHook(cfg.WebhookEnabled, cfg.WebhookSecrets)
	if err != nil {
		return nil, err
	}
	f := &Forge{origin: origin, hook: h}
	f.Actor = forge.GuardActor(f.Credentials, func() forge.Actor { return f.rep })
	if cfg.Token == "" && cfg.AppID == 0 && len(cfg.PrivateKey) == 0 {
		return f, nil
	}
	if f.rep, err = New(cfg); err != nil {
		return nil, fmt.Errorf("configuring github: %w", err)
	}
	return f, nil
}

// Reporter is the API client; nil without credentials. Webhook
// redelivery (recovery) uses it beside the Forge methods.
func (f *Forge) Reporter() *Reporter { return f.rep }

// Name is github.
func (f *Forge) Name() workflows.Forge { return Name }

// Credentials is nil with a token or an App.
func (f *Forge) Credentials() error {
	if f.rep == nil {
		return fmt.Errorf("no github API credentials: set github.token or github.app_id: %w", forge.ErrNoCredentials)
	}
	return nil
}

// PullRequestHead asks the pulls API (Reporter.PullRequestHead).
func (f *Forge) PullRequestHead(ctx context.Context, e *workflows.Event) (workflows.Head, error) {
	if err := f.Credentials(); err != nil {
		return workflows.Head{}, err
	}
	return f.rep.PullRequestHead(ctx, e)
}

// ChangedFiles asks the pulls or compare API (Reporter.ChangedFiles).
func (f *Forge) ChangedFiles(ctx context.Context, e *workflows.Event) (workflows.ChangedFiles, error) {
	if err := f.Credentials(); err != nil {
		return workflows.ChangedFiles{}, err
	}
	return f.rep.ChangedFiles(ctx, e)
}

// Association is forge.ErrAssociationInPayload: GitHub's payloads carry
// author_association.
func (f *Forge) Association(context.Context, *workflows.Event) (string, error) {
	return "", forge.ErrAssociationInPayload
}

// Report reports r (Reporter.Report); without credentials it does nothing.
func (f *Forge) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	if f.rep == nil {
		return r.Ref, nil
	}
	return f.rep.Report(ctx, r)
}

// OpenDraft opens a draft pull request (Reporter.OpenDraft).
func (f *Forge) OpenDraft(ctx context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error) {
	if err := f.Credentials(); err != nil {
		return workflows.ChangeRequest{}, fmt.Errorf("opening a draft pull request: %w", err)
	}
	return f.rep.OpenDraft(ctx, req)
}

// GitOrigin is the origin of api_url (GitOrigin).
func (f *Forge) GitOrigin() (string, error) { return f.origin, nil }

// GitCredentials are the token's, or an installation's
// (Reporter.GitCredentials); none without credentials.
func (f *Forge) GitCredentials(ctx context.Context, e *workflows.Event) (string, string, error) {
	if f.rep == nil {
		return "", "", nil
	}
	return f.rep.GitCredentials(ctx, e)
}

var _ forge.Forge = (*Forge)(nil)
