package gitea

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Name is the forge this package implements: Event.Forge of Gitea's (and
// Forgejo's) events, the gitea configuration section, POST /hooks/gitea.
const Name workflows.Forge = "gitea"

// Forge is a Gitea or Forgejo server as hookrun uses it
// (providers/forge.Forge): its API client when it has a token, and the
// git origin of its base_url, which it has either way.
type Forge struct {
	// Base is the API methods (lookups, Report, OpenDraft, Review and the
	// Actor, forge.ErrNoCredentials without credentials), the webhook
	// configuration (webhook.go) and the git origin.
	forge.Base

	rep    *Reporter   // nil without a token
	labels LabelMemory // nil: label changes are unknown
}

// parts are how NewForge builds the Base.
var parts = forge.Parts[Config, *Reporter]{Name: Name, Request: "pull request",
	Origin: func(c Config) (string, error) { return GitOrigin(c.BaseURL) },
	Hook:   hookSpec,
	Token:  func(c Config) string { return c.Token }, New: New,
	// Gitea takes an access token as the password of any user name.
	GitUser: "oauth2"}

// NewForge builds Gitea from cfg (BaseURL is required: there is no default
// Gitea). Without a token its API methods answer forge.ErrNoCredentials
// and Report does nothing.
func NewForge(cfg Config) (*Forge, error) {
	f := &Forge{}
	if err := forge.Build(&f.Base, &f.rep, cfg, parts, f.Credentials); err != nil {
		return nil, err
	}
	f.labels = cfg.Labels
	return f, nil
}

// Association is the author's permission on the repository
// (Reporter.CollaboratorAssociation): Gitea's payloads carry no
// association. The error says what could not be looked up, for the skip
// reason.
func (f *Forge) Association(ctx context.Context, e *workflows.Event) (string, error) {
	missing := ""
	if e.Repo == "" || e.Author == "" {
		missing = "the payload names no repository or author to look up the author's permission with"
	}
	return forge.LookUpAssociation(f.Credentials(), "no gitea API token is configured to look up the author's permission", missing,
		"the author's gitea permission on the repository",
		func() (string, error) { return f.rep.CollaboratorAssociation(ctx, e.Repo, e.Author) })
}

// Links are the common layout (forge.Links' defaults) under the git
// origin.
func (f *Forge) Links() forge.Links { return forge.Links{Web: f.Origin()} }

// Credentials is nil with a token.
func (f *Forge) Credentials() error {
	if f.rep == nil {
		return fmt.Errorf("no gitea API token is configured: set gitea.token: %w", forge.ErrNoCredentials)
	}
	return nil
}

var _ forge.Forge = (*Forge)(nil)
