package github

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// OpenDraft implements contract.DraftOpener: it opens a draft pull request
// merging req.Head into req.Base, both branches of the event's repository
// (`POST /repos/{owner}/{repo}/pulls` with draft: true). When GitHub answers
// 422 because one is open for that head already (an earlier run pushed the
// same branch), it returns that one. The token (or the App's installation)
// needs pull requests: write.
func (r *Reporter) OpenDraft(ctx context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error) {
	var cr workflows.ChangeRequest
	ev := req.Event
	if ev == nil || !r.takes(ev) {
		return cr, fmt.Errorf("opening draft pull request on %s: not a %s event", r.cfg.Forge, r.cfg.Forge)
	}
	owner, repo, ok := strings.Cut(ev.Repo, "/")
	if !ok || owner == "" || repo == "" {
		return cr, fmt.Errorf("opening draft pull request on github: repository %q is not owner/name", ev.Repo)
	}
	c, err := r.client(ev.InstallationID)
	if err != nil {
		return cr, fmt.Errorf("opening draft pull request in %s: %w", ev.Repo, err)
	}
	return forge.OpenDraft(fmt.Sprintf("draft pull request %s → %s in %s", req.Head, req.Base, ev.Repo), http.StatusUnprocessableEntity,
		func(pr *gh.PullRequest) workflows.ChangeRequest {
			return workflows.ChangeRequest{Number: pr.GetNumber(), URL: pr.GetHTMLURL()}
		},
		func() (*gh.PullRequest, int, error) {
			pr, resp, err := c.PullRequests.Create(ctx, owner, repo, &gh.NewPullRequest{
				Title: gh.String(req.Title), Head: gh.String(req.Head), Base: gh.String(req.Base),
				Body: gh.String(req.Body), Draft: gh.Bool(true),
			})
			return pr, statusOf(resp), err
		},
		func() ([]*gh.PullRequest, error) {
			open, _, err := c.PullRequests.List(ctx, owner, repo, &gh.PullRequestListOptions{
				State: "open", Head: owner + ":" + req.Head, Base: req.Base})
			return open, err
		})
}

// statusOf is the HTTP status of an API answer; 0 without one.
func statusOf(resp *gh.Response) int {
	if resp == nil || resp.Response == nil {
		return 0
	}
	return resp.StatusCode
}

var _ contract.DraftOpener = (*Reporter)(nil)
