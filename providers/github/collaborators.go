package github

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// loginName is what a user name may be in a path: GitHub's, Gitea's and
// Forgejo's logins are letters, digits, '-', '_' and '.'.
var loginName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Permission returns login's permission on repo (owner/name) as the API
// names it, with GET /repos/{owner}/{repo}/collaborators/{login}/permission:
// admin, write, read or none on GitHub; Gitea and Forgejo also answer
// owner. Authenticated with the token (Apps are not asked: GitHub's
// payloads carry author associations).
func (r *Reporter) Permission(ctx context.Context, repo, login string) (string, error) {
	owner, name, err := r.repoAndLogin(repo, login)
	if err != nil {
		return "", err
	}
	p, _, err := r.token.Repositories.GetPermissionLevel(ctx, owner, name, login)
	if err != nil {
		return "", fmt.Errorf("reading the permission of %s on %s on %s: %w", login, repo, r.cfg.Forge, err)
	}
	return strings.ToLower(p.GetPermission()), nil
}

// IsCollaborator reports whether login is a collaborator of repo, with GET
// /repos/{owner}/{repo}/collaborators/{login} (204 yes, 404 no): on a
// public Gitea repository every user has read permission, collaborator
// or not.
func (r *Reporter) IsCollaborator(ctx context.Context, repo, login string) (bool, error) {
	owner, name, err := r.repoAndLogin(repo, login)
	if err != nil {
		return false, err
	}
	ok, _, err := r.token.Repositories.IsCollaborator(ctx, owner, name, login)
	if err != nil {
		return false, fmt.Errorf("asking whether %s is a collaborator of %s on %s: %w", login, repo, r.cfg.Forge, err)
	}
	return ok, nil
}

func (r *Reporter) repoAndLogin(repo, login string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	switch {
	case r.token == nil:
		return "", "", fmt.Errorf("reading permissions on %s: needs a token", r.cfg.Forge)
	case !ok || owner == "" || name == "" || strings.Contains(name, "/"):
		return "", "", fmt.Errorf("reading permissions on %s: repository %q is not owner/name", r.cfg.Forge, repo)
	case !loginName.MatchString(login):
		return "", "", fmt.Errorf("reading permissions on %s: %q is not a user name", r.cfg.Forge, login)
	}
	return owner, name, nil
}
