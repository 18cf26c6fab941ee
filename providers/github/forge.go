package github

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Name is the forge this package implements: Event.Forge of GitHub's
// events, the github configuration section, POST /hooks/github.
const Name workflows.Forge = "github"

// A chat trigger's repository may live on github (the default), and the
// variables GitHub's tools read a token from are stored with sbx's github
// (or copilot) service.
func init() {
	workflows.RegisterChatForge(Name, true)
	workflows.RegisterSbxService("GITHUB_TOKEN", "github")
	workflows.RegisterSbxService("GH_TOKEN", "github")
	workflows.RegisterSbxService("COPILOT_GITHUB_TOKEN", "copilot")
}

// Forge is GitHub as hookrun uses it (providers/forge.Forge): its API
// client when it has a token or an App, and the git origin of its
// api_url, which it has either way.
type Forge struct {
	// Base is the API methods (lookups, Report, OpenDraft, Review and the
	// Actor, forge.ErrNoCredentials without credentials), the webhook
	// configuration (webhook.go) and the git origin.
	forge.Base

	rep *Reporter // nil without credentials
}

// parts are how NewForge builds the Base.
var parts = forge.Parts[Config, *Reporter]{Name: Name, Request: "pull request",
	Origin:       func(c Config) (string, error) { return GitOrigin(c.APIURL) },
	Hook:         hookSpec,
	Credentialed: func(c Config) bool { return c.Token != "" || c.AppID != 0 || len(c.PrivateKey) != 0 }, New: New}

// NewForge builds GitHub from cfg. Without a token or an App its API
// methods answer forge.ErrNoCredentials and Report does nothing.
func NewForge(cfg Config) (*Forge, error) {
	f := &Forge{}
	if err := forge.Build(&f.Base, &f.rep, cfg, parts, f.Credentials); err != nil {
		return nil, err
	}
	return f, nil
}

// Reporter is the API client; nil without credentials. Webhook
// redelivery (recovery) uses it beside the Forge methods.
func (f *Forge) Reporter() *Reporter { return f.rep }

// Association is forge.ErrAssociationInPayload for the events whose
// payloads carry author_association. A rerequest's names nobody's role:
// its Author (the sender) is looked up by permission on the repository
// (Reporter.collaboratorAssociation, as an App's installation). The error
// says what could not be looked up, for the skip reason.
func (f *Forge) Association(ctx context.Context, e *workflows.Event) (string, error) {
	if e.Author == "" {
		return "", forge.ErrAssociationInPayload
	}
	missing := ""
	if e.Repo == "" {
		missing = "the payload names no repository to look up the requester's permission on"
	}
	return forge.LookUpAssociation(f.Credentials(), "no github API credentials are configured to look up the requester's permission", missing,
		"the requester's github permission on the repository",
		func() (string, error) { return f.rep.collaboratorAssociation(ctx, e.InstallationID, e.Repo, e.Author) })
}

// Links are the common layout (forge.Links' defaults) under the git
// origin.
func (f *Forge) Links() forge.Links { return forge.Links{Web: f.Origin()} }

// GitCredentials are the token's, or an installation's
// (Reporter.GitCredentials); none without credentials.
func (f *Forge) GitCredentials(ctx context.Context, e *workflows.Event) (string, string, error) {
	if f.rep == nil {
		return "", "", nil
	}
	return f.rep.GitCredentials(ctx, e)
}

// Credentials is nil with a token or an App.
func (f *Forge) Credentials() error {
	if f.rep == nil {
		return fmt.Errorf("no github API credentials: set github.token or github.app_id: %w", forge.ErrNoCredentials)
	}
	return nil
}

var _ forge.Forge = (*Forge)(nil)
