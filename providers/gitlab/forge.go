package gitlab

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Name is the forge this package implements: Event.Forge of GitLab's
// events, the gitlab configuration section, POST /hooks/gitlab.
const Name workflows.Forge = "gitlab"

// A chat trigger's repository may live on gitlab.
func init() { workflows.RegisterChatForge(Name, false) }

// Forge is GitLab as hookrun uses it (providers/forge.Forge): its API
// client when it has a token, and the git origin of its base_url, which
// it has either way.
type Forge struct {
	// Base is the API methods (lookups, Report, OpenDraft, Review and the
	// Actor, forge.ErrNoCredentials without credentials), the webhook
	// configuration (webhook.go) and the git origin.
	forge.Base

	rep *Reporter // nil without a token
}

// parts are how NewForge builds the Base.
var parts = forge.Parts[Config, *Reporter]{Name: Name, Request: "merge request",
	Origin: func(c Config) (string, error) { return GitOrigin(c.BaseURL) },
	Hook:   hookSpec,
	Token:  func(c Config) string { return c.Token }, New: New,
	GitUser: "oauth2"}

// NewForge builds GitLab from cfg. Without a token its API methods answer
// forge.ErrNoCredentials and Report does nothing.
func NewForge(cfg Config) (*Forge, error) {
	f := &Forge{}
	if err := forge.Build(&f.Base, &f.rep, cfg, parts, f.Credentials); err != nil {
		return nil, err
	}
	return f, nil
}

// Association is the author's access level in the project
// (Reporter.AuthorAssociation): GitLab's payloads carry no association.
// The error says what could not be looked up, for the skip reason.
func (f *Forge) Association(ctx context.Context, e *workflows.Event) (string, error) {
	missing := ""
	if e.ProjectID <= 0 || e.AuthorID <= 0 {
		missing = "the payload names no project or author id to look up the author's membership with"
	}
	return forge.LookUpAssociation(f.Credentials(), "no gitlab API token is configured to look up the author's membership", missing,
		"the author's gitlab membership", func() (string, error) { return f.rep.AuthorAssociation(ctx, e.ProjectID, e.AuthorID) })
}

// Links are a merge request's and an issue's pages under /-/, a note's
// anchor #note_<id>, "!N" in text and refs/merge-requests/N/head; the web
// origin is the git origin.
func (f *Forge) Links() forge.Links { return links(f.Origin()) }

// links are GitLab's Links under web.
func links(web string) forge.Links {
	return forge.Links{Web: web, Pages: "/-/", Request: "merge request", RequestPath: "merge_requests",
		Mark: "!", CommentAnchor: "#note_", HeadRef: "refs/merge-requests/%d/head"}
}

// Credentials is nil with a token.
func (f *Forge) Credentials() error {
	if f.rep == nil {
		return fmt.Errorf("no gitlab API token is configured: set gitlab.token: %w", forge.ErrNoCredentials)
	}
	return nil
}

var _ forge.Forge = (*Forge)(nil)
