package github

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hookrun/hookrun/workflows"
)

// loginName is what a user name may be in a path: the logins of GitHub and
// of the forges modeled on it are letters, digits, '-', '_' and '.'.
var loginName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Association maps a permission on a repository as the collaborators API
// names it to an author association: owner (a forge modeled on GitHub's
// answers it; on GitHub, admin of the repository's owner) → OWNER; admin and write → MEMBER; read →
// COLLABORATOR for a collaborator of the repository (every signed-in user
// reads a public one); anything else NONE.
func Association(permission string, collaborator bool) string {
	switch permission {
	case "owner":
		return "OWNER"
	case "admin", "write":
		return "MEMBER"
	case "read":
		if collaborator {
			return "COLLABORATOR"
		}
	}
	return "NONE"
}

// CollaboratorAssociation implements workflows.CollaboratorLookup with the
// token (the events of a forge whose payloads carry no association):
// collaboratorAssociation.
func (r *Reporter) CollaboratorAssociation(ctx context.Context, repo, login string) (string, error) {
	return r.collaboratorAssociation(ctx, 0, repo, login)
}

// collaboratorAssociation is login's permission on repo (owner/name),
// GET /repos/{owner}/{repo}/collaborators/{login}/permission, mapped by
// Association; for read the API is also asked whether login is a
// collaborator (GET /repos/{owner}/{repo}/collaborators/{login}, 204 yes,
// 404 no), so that a stranger stays NONE. An App asks as installation.
func (r *Reporter) collaboratorAssociation(ctx context.Context, installation int64, repo, login string) (string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	switch {
	case !ok || owner == "" || name == "" || strings.Contains(name, "/"):
		return "", fmt.Errorf("reading permissions on %s: repository %q is not owner/name", r.cfg.Forge, repo)
	case !loginName.MatchString(login):
		return "", fmt.Errorf("reading permissions on %s: %q is not a user name", r.cfg.Forge, login)
	}
	c, err := r.client(installation)
	if err != nil {
		return "", fmt.Errorf("reading permissions on %s: %w", r.cfg.Forge, err)
	}
	level, _, err := c.Repositories.GetPermissionLevel(ctx, owner, name, login)
	if err != nil {
		return "", fmt.Errorf("reading the permission of %s on %s on %s: %w", login, repo, r.cfg.Forge, err)
	}
	p := strings.ToLower(level.GetPermission())
	if p == "admin" && r.cfg.Forge == Name && strings.EqualFold(login, owner) {
		p = "owner"
	}
	collaborator := false
	if p == "read" {
		if collaborator, _, err = c.Repositories.IsCollaborator(ctx, owner, name, login); err != nil {
			return "", fmt.Errorf("asking whether %s is a collaborator of %s on %s: %w", login, repo, r.cfg.Forge, err)
		}
	}
	return Association(p, collaborator), nil
}

var _ workflows.CollaboratorLookup = (*Reporter)(nil)
