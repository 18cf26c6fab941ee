package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/providers/forge"
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
	if ev == nil || (ev.Forge != "" && ev.Forge != Name) || ev.Repo == "" {
		return cr, errors.New("opening draft merge request on gitlab: not a gitlab event")
	}
	return forge.OpenDraft(fmt.Sprintf("draft merge request %s → %s in %s", req.Head, req.Base, ev.Repo), http.StatusConflict,
		func(mr *gl.BasicMergeRequest) workflows.ChangeRequest {
			return workflows.ChangeRequest{Number: int(mr.IID), URL: mr.WebURL}
		},
		func() (*gl.BasicMergeRequest, int, error) {
			mr, resp, err := r.api.MergeRequests.CreateMergeRequest(ev.Repo, &gl.CreateMergeRequestOptions{
				Title: gl.Ptr("Draft: " + req.Title), Description: inert(req.Body),
				SourceBranch: gl.Ptr(req.Head), TargetBranch: gl.Ptr(req.Base),
			}, gl.WithContext(ctx))
			if mr == nil {
				return nil, statusOf(resp), err
			}
			return &mr.BasicMergeRequest, statusOf(resp), err
		},
		func() ([]*gl.BasicMergeRequest, error) {
			open, _, err := r.api.MergeRequests.ListProjectMergeRequests(ev.Repo, &gl.ListProjectMergeRequestsOptions{
				State: gl.Ptr("opened"), SourceBranch: gl.Ptr(req.Head), TargetBranch: gl.Ptr(req.Base)}, gl.WithContext(ctx))
			return open, err
		})
}

// statusOf is the HTTP status of an API answer; 0 without one.
func statusOf(resp *gl.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}

var _ contract.DraftOpener = (*Reporter)(nil)
