package workflows

import "context"

// Head is where a pull or merge request's head was at one moment: the
// commit a run triggered by a comment on it checks out, so that what runs
// is what the commenter saw and not whatever is pushed afterwards.
type Head struct {
	SHA     string `json:"sha"`                // head commit
	HeadRef string `json:"head_ref,omitempty"` // source branch
	BaseRef string `json:"base_ref,omitempty"` // target branch
	Fork    bool   `json:"fork"`               // the head lives in another repository
}

// HeadLookup asks a forge's API for the current head of the pull or merge
// request an event is about (e.Repo, e.Number(); e.InstallationID or
// e.ProjectID where the forge's API needs them). Ingress consumes it for a
// comment whose payload names no head and whose pull request it has seen
// no pull_request event of; each forge's Lookups (providers/forge)
// implement it. Callers bound ctx: a forge that is down must not hold a
// delivery up.
type HeadLookup interface {
	PullRequestHead(ctx context.Context, e *Event) (Head, error)
}

// AssociationLookup asks a forge's API for a user's role in a project as an
// author association: OWNER, MEMBER, COLLABORATOR, or NONE for a user who
// is not a member (that is an answer, not an error). projectID and userID
// are the forge's numeric ids (Event.ProjectID, Event.AuthorID). Ingress
// consumes it for the events of a forge whose payloads carry no
// association and whose API is asked by id, and caches the answers. An error means the
// role is unknown: ingress then treats the user as NONE.
type AssociationLookup interface {
	AuthorAssociation(ctx context.Context, projectID, userID int64) (string, error)
}

// ChangedFilesLookup asks a forge's API which files an event's change
// touches: a pull/merge request's files (a forge that stops listing
// answers Truncated), or for a push whose payload lists only its first
// commits, the files between e.Push.Before and e.Push.After. Ingress
// consumes it for triggers with paths; each forge's Lookups implement it. Callers bound ctx.
type ChangedFilesLookup interface {
	ChangedFiles(ctx context.Context, e *Event) (ChangedFiles, error)
}

// CollaboratorLookup asks a forge's API for a user's permission on a
// repository as an author association: OWNER, MEMBER, COLLABORATOR, or
// NONE for a user without access of their own (an answer, not an error).
// repo is Event.Repo, login Event.Author. Ingress consumes it for the
// events of a forge whose payloads carry no association and whose API is
// asked by login, and caches the answers. An error means the role is unknown:
// ingress then treats the user as NONE.
type CollaboratorLookup interface {
	CollaboratorAssociation(ctx context.Context, repo, login string) (string, error)
}
