package gitea

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Name is the forge this package implements: Event.Forge of Gitea's (and
// Forgejo's) events, the gitea configuration section, POST /hooks/gitea.
const Name = workflows.Gitea

// Forge is a Gitea or Forgejo server as hookrun uses it
// (providers/forge.Forge): its API client when it has a token, and the
// git origin of its base_url, which it has either way.
type Forge struct {
	// Actor is the Reporter's, guarded: forge.ErrNoCredentials without
	// credentials (actions.go).
	forge.Actor

	rep    *Reporter // nil without a token
	token  string
	origin string
	hook   hook // webhook.go
}

// NewForge builds Gitea from cfg (BaseURL is required: there is no default
// Gitea). Without a token its API methods answer forge.ErrNoCredentials
// and Report does nothing.
func NewForge(cfg Config) (*Forge, error) {
	origin, err := GitOrigin(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	h, err := newHook(cfg.WebhookEnabled, cfg.WebhookSecrets)
	if err != nil {
		return nil, err
	}
	f := &Forge{origin: origin, token: cfg.Token, hook: h}
	f.Actor = forge.GuardActor(f.Credentials, func() forge.Actor { return f.rep })
	if cfg.Token == "" {
		return f, nil
	}
	if f.rep, err = New(cfg); err != nil {
		return nil, fmt.Errorf("configuring gitea: %w", err)
	}
	return f, nil
}

// Name is gitea.
func (f *Forge) Name() workflows.Forge { return Name }

// Credentials is nil with a token.
func (f *Forge) Credentials() error {
	if f.rep == nil {
		return fmt.Errorf("no gitea API token is configured: set gitea.token: %w", forge.ErrNoCredentials)
	}
	return nil
}

// PullRequestHead asks the pulls API.
func (f *Forge) PullRequestHead(ctx context.Context, e *workflows.Event) (workflows.Head, error) {
	if err := f.Credentials(); err != nil {
		return workflows.Head{}, err
	}
	return f.rep.PullRequestHead(ctx, e)
}

// ChangedFiles asks the pull request files API.
func (f *Forge) ChangedFiles(ctx context.Context, e *workflows.Event) (workflows.ChangedFiles, error) {
	if err := f.Credentials(); err != nil {
		return workflows.ChangedFiles{}, err
	}
	return f.rep.ChangedFiles(ctx, e)
}

// Association is the author's permission on the repository
// (Reporter.CollaboratorAssociation): Gitea's payloads carry no
// association. The error says what could not be looked up, for the skip
// reason.
func (f *Forge) Association(ctx context.Context, e *workflows.Event) (string, error) {
	switch {
	case f.rep == nil:
		return "", fmt.Errorf("no gitea API token is configured to look up the author's permission: %w", forge.ErrNoCredentials)
	case e.Repo == "" || e.Author == "":
		return "", fmt.Errorf("the payload names no repository or author to look up the author's permission with")
	}
	a, err := f.rep.CollaboratorAssociation(ctx, e.Repo, e.Author)
	if err != nil {
		return "", fmt.Errorf("looking up the author's gitea permission on the repository failed: %w", err)
	}
	return a, nil
}

// Report reports r; without a token it does nothing.
func (f *Forge) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	if f.rep == nil {
		return r.Ref, nil
	}
	return f.rep.Report(ctx, r)
}

// OpenDraft opens a draft pull request.
func (f *Forge) OpenDraft(ctx context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error) {
	if err := f.Credentials(); err != nil {
		return workflows.ChangeRequest{}, fmt.Errorf("opening a draft pull request: %w", err)
	}
	return f.rep.OpenDraft(ctx, req)
}

// GitOrigin is the origin of base_url (GitOrigin).
func (f *Forge) GitOrigin() (string, error) { return f.origin, nil }

// GitCredentials are "oauth2" and the token (Gitea takes an access token
// as the password of any user name); none without one.
func (f *Forge) GitCredentials(context.Context, *workflows.Event) (string, string, error) {
	if f.token == "" {
		return "", "", nil
	}
	return "oauth2", f.token, nil
}

var _ forge.Forge = (*Forge)(nil)
