package github

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// GitOrigin is the origin, scheme://host[:port], that git clones from when
// the REST API is at apiURL ("" = github.com): https://github.com for
// https://api.github.com/, SUBDOMAIN.ghe.com for api.SUBDOMAIN.ghe.com
// (GitHub Enterprise Cloud with data residency), and the API's own host for
// GitHub Enterprise Server (https://HOST/api/v3/ → https://HOST).
func GitOrigin(apiURL string) (string, error) {
	u, err := forge.HTTPURL("github api_url", apiURL, DefaultAPIURL)
	if err != nil {
		return "", err
	}
	host := strings.ToLower(u.Host)
	switch {
	case host == "api.github.com":
		host = "github.com"
	case strings.HasPrefix(host, "api.") && strings.HasSuffix(host, ".ghe.com"):
		host = strings.TrimPrefix(host, "api.")
	}
	return strings.ToLower(u.Scheme) + "://" + host, nil
}

// GitCredentials returns what git fetches e's repository with (it is a
// git.AuthFunc): user "x-access-token" and the configured token, or, for a
// GitHub App, a token of the installation: e's InstallationID, or when the
// event carries none, the installation GET /repos/{owner}/{repo}/installation
// names (asked once per repository). Installation tokens come from the cache
// the API calls use, renewed a minute before they expire.
func (r *Reporter) GitCredentials(ctx context.Context, e *workflows.Event) (user, token string, err error) {
	if r.token != nil {
		return "x-access-token", r.cfg.Token, nil
	}
	id := e.InstallationID
	if id == 0 {
		if id, err = r.repoInstallation(ctx, e.Repo); err != nil {
			return "", "", fmt.Errorf("getting git credentials for %s: %w", e.Repo, err)
		}
	}
	r.mu.Lock()
	t := r.tokenLocked(id)
	r.mu.Unlock()
	tok, err := t.token(ctx)
	if err != nil {
		if e.InstallationID == 0 {
			r.mu.Lock()
			delete(r.repoApps, strings.ToLower(e.Repo)) // reinstalled? ask again next time
			r.mu.Unlock()
		}
		return "", "", fmt.Errorf("getting git credentials for %s: %w", e.Repo, err)
	}
	return "x-access-token", tok, nil
}

// repoInstallation finds the App's installation on a repository.
func (r *Reporter) repoInstallation(ctx context.Context, repo string) (int64, error) {
	key := strings.ToLower(repo)
	r.mu.Lock()
	id, ok := r.repoApps[key]
	r.mu.Unlock()
	if ok {
		return id, nil
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" {
		return 0, fmt.Errorf("repository %q is not owner/name", repo)
	}
	inst, _, err := r.app.Apps.FindRepositoryInstallation(ctx, owner, name)
	if err != nil {
		return 0, fmt.Errorf("finding the app's installation on %s: %w", repo, err)
	}
	if inst.GetID() == 0 {
		return 0, errors.New("finding the app's installation: answer without an id")
	}
	r.mu.Lock()
	r.repoApps[key] = inst.GetID()
	r.mu.Unlock()
	return inst.GetID(), nil
}

// tokenLocked returns the token cache of an installation, made on first
// use; r.mu is held.
func (r *Reporter) tokenLocked(id int64) *installationToken {
	t, ok := r.tokens[id]
	if !ok {
		t = &installationToken{base: r.rl, app: r.app, id: id, now: time.Now}
		r.tokens[id] = t
	}
	return t
}
