package gitlab

import (
	"context"
	"errors"
	"fmt"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/workflows"
)

// PullRequestHead implements workflows.HeadLookup with GET
// /projects/:id/merge_requests/:iid (the project by Event.ProjectID, else
// by its path): the head SHA, source and target branches, and Fork when
// the source project is not the target project. GitLab note payloads
// already carry the head (merge_request.last_commit), so ingress needs this
// only for payloads that lack it. Ingress bounds ctx.
func (r *Reporter) PullRequestHead(ctx context.Context, e *workflows.Event) (workflows.Head, error) {
	if e == nil || e.PullRequest == nil || e.PullRequest.Number <= 0 {
		return workflows.Head{}, errors.New("looking up a merge request head on gitlab: event names no merge request")
	}
	var pid any = e.Repo
	if e.ProjectID > 0 {
		pid = e.ProjectID
	}
	iid := int64(e.PullRequest.Number)
	mr, _, err := r.api.MergeRequests.GetMergeRequest(pid, iid, nil, gl.WithContext(ctx))
	if err != nil {
		return workflows.Head{}, fmt.Errorf("looking up the head of %s!%d on gitlab: %w", e.Repo, iid, err)
	}
	if mr.SHA == "" {
		return workflows.Head{}, fmt.Errorf("looking up the head of %s!%d on gitlab: the answer names no head commit", e.Repo, iid)
	}
	return workflows.Head{SHA: mr.SHA, HeadRef: mr.SourceBranch, BaseRef: mr.TargetBranch,
		Fork: mr.SourceProjectID != mr.TargetProjectID}, nil
}

var _ workflows.HeadLookup = (*Reporter)(nil)
