package gitlab

import (
	"context"
	"errors"
	"fmt"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/workflows"
)

// AuthorAssociation implements workflows.AssociationLookup with GET
// /projects/:id/members/all/:user_id (direct, inherited and shared
// memberships), mapping the access level the way an author association reads:
// Owner (50) → OWNER; Maintainer (40) and Developer (30) → MEMBER; Reporter
// (20) → COLLABORATOR; anything lower (Planner, Guest, Minimal access), a
// user who is not a member (404), a blocked user or an expired membership →
// NONE. Any other failure is an error: the caller treats the user as NONE.
// Ingress caches the answers and bounds ctx.
func (r *Reporter) AuthorAssociation(ctx context.Context, projectID, userID int64) (string, error) {
	if projectID <= 0 || userID <= 0 {
		return "", fmt.Errorf("looking up gitlab membership: project id %d or user id %d is missing", projectID, userID)
	}
	m, _, err := r.api.ProjectMembers.GetInheritedProjectMember(projectID, userID, gl.WithContext(ctx))
	if errors.Is(err, gl.ErrNotFound) {
		return associationNone, nil
	}
	if err != nil {
		return "", fmt.Errorf("looking up gitlab membership of user %d in project %d: %w", userID, projectID, err)
	}
	if m.State != "" && m.State != "active" {
		return associationNone, nil
	}
	if m.ExpiresAt != nil && !time.Now().Before(time.Time(*m.ExpiresAt)) {
		return associationNone, nil
	}
	return associationOf(m.AccessLevel), nil
}

const associationNone = "NONE"

// associationOf maps a GitLab access level to an author association.
func associationOf(level gl.AccessLevelValue) string {
	switch {
	case level >= gl.OwnerPermissions:
		return "OWNER"
	case level >= gl.DeveloperPermissions:
		return "MEMBER"
	case level >= gl.ReporterPermissions:
		return "COLLABORATOR"
	}
	return associationNone
}

var _ workflows.AssociationLookup = (*Reporter)(nil)
