package app

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/git"
	"github.com/hookrun/hookrun/workflows"
)

// The server's trust boundary, wired from the configuration: which
// repositories it acts for (allow_repos) and where the forges' credentials
// may go (each forge's own host).

// admitRepos is the runner's check of allow_repos, defense in depth behind
// ingress: a run for another repository (published by an older ingress, or
// by anything else with access to the stream) fails before its checkout.
// nil when allow_repos is unset, which `hookrun runner` allows.
func admitRepos(patterns []string) func(*workflows.Event) error {
	if len(patterns) == 0 {
		return nil
	}
	return func(e *workflows.Event) error {
		if workflows.AnyRepo(patterns, e.Repo) {
			return nil
		}
		return fmt.Errorf("repository %q is not in allow_repos", e.Repo)
	}
}

// Workspaces is the runner's git checkouts: clone URLs confined to their
// forge's host (github.com or the host of github.api_url; gitlab.com or the
// host of gitlab.base_url; the host of gitea.base_url), fetched with that forge's credentials. They also
// deliver sandboxed agents' commits: pushed there with the same
// credentials, draft pull/merge requests opened with the forges' clients.
// owner, when set, is the step user the run directories are handed to.
func (f *Forges) Workspaces(cfg *Config, owner *git.Owner) (*git.Workspaces, error) {
	origins, err := f.Registry.Origins()
	if err != nil {
		return nil, err
	}
	return git.New(git.Config{
		DataDir: cfg.DataDir,
		Auth:    gitAuth(f.Registry),
		Origins: origins,
		Links:   f.Registry.Links,
		Drafts:  f,
		Owner:   owner,
	})
}

// gitAuth lets the mirror fetch private repositories with the credentials
// of each event's forge (GitHub's token or an App's installation tokens;
// GitLab's and Gitea's tokens), never another forge's.
func gitAuth(reg *forge.Registry) git.AuthFunc {
	return func(ctx context.Context, e *workflows.Event) (string, string, error) {
		return reg.Get(e.Forge).GitCredentials(ctx, e)
	}
}
