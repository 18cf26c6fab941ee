package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// OpenDraft implements contract.DraftOpener: it opens a draft merge request
// (its title starts with "Draft: ") from req.Head into req.Base, both
// branches of the event's project (`POST /projects/:id/merge_requests`).
// When GitLab answers 409 because one is open for that source branch
// already, it returns that one.
func (r *Reporter) OpenDraft(ctx context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error) {
	var cr workflows.ChangeRequest
	ev := req.Event
	if ev == nil || (ev.Forge != "" && ev.Forge != workflows.GitLab) || ev.Repo == "" {
		return cr, errors.New("opening draft merge request on gitlab: not a gitlab event")
	}
	mr, resp, err := r.api.MergeRequests.CreateMergeRequest(ev.Repo, &gl.CreateMergeRequestOptions{
		Title: gl.Ptr("Draft: " + req.Title), Description: gl.Ptr(req.Body),
		SourceBranch: gl.Ptr(req.Head), TargetBranch: gl.Ptr(req.Base),
	}, gl.WithContext(ctx))
	if err == nil {
		return workflows.ChangeRequest{Number: int(mr.IID), URL: mr.WebURL}, nil
	}
	if resp == nil || resp.StatusCode != http.StatusConflict {
		return cr, fmt.Errorf("opening draft merge request %s → %s in %s: %w", req.Head, req.Base, ev.Repo, err)
	}
	open, _, lerr := r.api.MergeRequests.ListProjectMergeRequests(ev.Repo, &gl.ListProjectMergeRequestsOptions{
		State: gl.Ptr("opened"), SourceBranch: gl.Ptr(req.Head), TargetBranch: gl.Ptr(req.Base)}, gl.WithContext(ctx))
	if lerr != nil || len(open) == 0 {
		return cr, fmt.Errorf("opening draft merge request %s → %s in %s: %w", req.Head, req.Base, ev.Repo, err)
	}
	return workflows.ChangeRequest{Number: int(open[0].IID), URL: open[0].WebURL}, nil
}

var _ contract.DraftOpener = (*Reporter)(nil)
