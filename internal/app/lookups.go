package app

import (
	"context"
	"errors"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Trust gives ingress the forge API clients it asks what a payload does not
// say: GitHub's current head of a pull request, for a comment whose pull
// request sent no pull_request event yet; GitLab's merge request head and
// its members' roles; Gitea's pull request heads and its users'
// permissions. They are the reporters (the same credentials); a
// forge without API credentials has none: comments there whose head was not
// remembered are refused, and GitLab and Gitea events stay NONE. hookrun_heads comes
// with the queue (ingress takes it from the publisher).
func (f *Forges) Trust() ingress.TrustConfig {
	var t ingress.TrustConfig
	t.GitHubHeads = credentialed(f.Registry.Get(workflows.GitHub))
	gl := f.Registry.Get(workflows.GitLab)
	t.GitLabHeads, t.GitLabMembers = credentialed(gl), association(gl)
	gt := f.Registry.Get(workflows.Gitea)
	t.GiteaHeads, t.GiteaCollaborators = credentialed(gt), collaborators(gt)
	return t
}

// Files gives ingress the forge API clients that list the files a pull
// request or push changes, for triggers with paths (the reporters, with
// their credentials); a forge without API credentials answers
// forge.ErrNoCredentials, and such triggers then match.
func (f *Forges) Files() ingress.FilesConfig {
	return ingress.FilesConfig{
		GitHub: credentialed(f.Registry.Get(workflows.GitHub)),
		GitLab: credentialed(f.Registry.Get(workflows.GitLab)),
		Gitea:  credentialed(f.Registry.Get(workflows.Gitea)),
	}
}

// credentialed is f when it has API credentials, else nil: ingress's
// per-forge fields still say "no credentials" with nil (its own messages),
// until it asks the registry itself.
func credentialed(f forge.Forge) forge.Lookups {
	if f.Credentials() != nil {
		return nil
	}
	return f
}

// association adapts a forge's Association to ingress's GitLab lookup by
// ids, until ingress asks the registry itself.
func association(f forge.Forge) workflows.AssociationLookup {
	if f.Credentials() != nil {
		return nil
	}
	return assocFunc(func(ctx context.Context, projectID, userID int64) (string, error) {
		return unwrapped(f.Association(ctx, &workflows.Event{Forge: f.Name(), ProjectID: projectID, AuthorID: userID}))
	})
}

// collaborators adapts a forge's Association to ingress's Gitea lookup by
// repository and login.
func collaborators(f forge.Forge) workflows.CollaboratorLookup {
	if f.Credentials() != nil {
		return nil
	}
	return collabFunc(func(ctx context.Context, repo, login string) (string, error) {
		return unwrapped(f.Association(ctx, &workflows.Event{Forge: f.Name(), Repo: repo, Author: login}))
	})
}

type assocFunc func(ctx context.Context, projectID, userID int64) (string, error)

func (a assocFunc) AuthorAssociation(ctx context.Context, projectID, userID int64) (string, error) {
	return a(ctx, projectID, userID)
}

type collabFunc func(ctx context.Context, repo, login string) (string, error)

func (c collabFunc) CollaboratorAssociation(ctx context.Context, repo, login string) (string, error) {
	return c(ctx, repo, login)
}

// unwrapped is the API's own error of a failed association lookup:
// ingress says itself what it looked up.
func unwrapped(a string, err error) (string, error) {
	if u := errors.Unwrap(err); u != nil {
		return a, u
	}
	return a, err
}
