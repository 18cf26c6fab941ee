package github

import (
	"context"
	"fmt"
	"strings"

	"github.com/hookrun/hookrun/workflows"
)

// PullRequestHead implements workflows.HeadLookup with GET
// /repos/{owner}/{repo}/pulls/{number}, authenticated like the reports (the
// token, or the event's installation token for an App): the head SHA and
// branch, the base branch, and Fork when head.repo differs from base.repo
// or is gone (a deleted fork). Ingress bounds ctx.
func (r *Reporter) PullRequestHead(ctx context.Context, e *workflows.Event) (workflows.Head, error) {
	if e == nil || e.PullRequest == nil || e.PullRequest.Number <= 0 {
		return workflows.Head{}, fmt.Errorf("looking up a pull request head on %s: event names no pull request", r.cfg.Forge)
	}
	n := e.PullRequest.Number
	owner, repo, ok := strings.Cut(e.Repo, "/")
	if !ok || owner == "" || repo == "" {
		return workflows.Head{}, fmt.Errorf("looking up the head of pull request #%d on %s: repository %q is not owner/name", n, r.cfg.Forge, e.Repo)
	}
	c, err := r.client(e.InstallationID)
	if err != nil {
		return workflows.Head{}, fmt.Errorf("looking up the head of %s#%d on %s: %w", e.Repo, n, r.cfg.Forge, err)
	}
	pr, _, err := c.PullRequests.Get(ctx, owner, repo, n)
	if err != nil {
		return workflows.Head{}, fmt.Errorf("looking up the head of %s#%d on %s: %w", e.Repo, n, r.cfg.Forge, err)
	}
	head, base := pr.GetHead(), pr.GetBase()
	h := workflows.Head{
		SHA:     head.GetSHA(),
		HeadRef: head.GetRef(),
		BaseRef: base.GetRef(),
		Fork:    head.GetRepo() == nil || !strings.EqualFold(head.GetRepo().GetFullName(), base.GetRepo().GetFullName()),
	}
	if !workflows.IsCommitID(h.SHA) {
		return workflows.Head{}, fmt.Errorf("looking up the head of %s#%d on %s: the answer names no head commit", e.Repo, n, r.cfg.Forge)
	}
	return h, nil
}

var _ workflows.HeadLookup = (*Reporter)(nil)
