package gitlab

import (
	"context"
	"errors"
	"fmt"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/workflows"
)

// Bounds on listing changed files, as other forges': a merge request's diffs are
// read up to MaxMergeRequestFiles, past which the list is Truncated.
const (
	MaxMergeRequestFiles = 3000
	filesPerPage         = 100
)

// ChangedFiles implements workflows.ChangedFilesLookup: a merge request's
// files from GET /projects/:id/merge_requests/:iid/diffs (every page up to
// MaxMergeRequestFiles), a push's from GET
// /projects/:id/repository/compare?from=&to= (GitLab cuts a compare it
// cannot finish: compare_timeout, then Truncated). A renamed file counts
// under both names. Ingress bounds ctx.
func (r *Reporter) ChangedFiles(ctx context.Context, e *workflows.Event) (workflows.ChangedFiles, error) {
	if e == nil {
		return workflows.ChangedFiles{}, errors.New("listing changed files on gitlab: no event")
	}
	var pid any = e.Repo
	if e.ProjectID > 0 {
		pid = e.ProjectID
	}
	var out workflows.ChangedFiles
	add := func(oldPath, newPath string) {
		if newPath != "" {
			out.Paths = append(out.Paths, newPath)
		}
		if oldPath != "" && oldPath != newPath {
			out.Paths = append(out.Paths, oldPath)
		}
	}
	switch {
	case e.PullRequest != nil && e.PullRequest.Number > 0:
		iid := int64(e.PullRequest.Number)
		opt := &gl.ListMergeRequestDiffsOptions{ListOptions: gl.ListOptions{PerPage: filesPerPage, Page: 1}}
		count := 0
		for {
			diffs, resp, err := r.api.MergeRequests.ListMergeRequestDiffs(pid, iid, opt, gl.WithContext(ctx))
			if err != nil {
				return workflows.ChangedFiles{}, fmt.Errorf("listing the files of %s!%d on gitlab: %w", e.Repo, iid, err)
			}
			for _, d := range diffs {
				if d != nil {
					add(d.OldPath, d.NewPath)
				}
			}
			count += len(diffs)
			if resp.NextPage == 0 || count >= MaxMergeRequestFiles {
				out.Truncated = resp.NextPage != 0
				return out, nil
			}
			opt.Page = resp.NextPage
		}
	case e.Push != nil && e.Push.Before != "" && e.Push.After != "":
		cmp, _, err := r.api.Repositories.Compare(pid, &gl.CompareOptions{From: gl.Ptr(e.Push.Before), To: gl.Ptr(e.Push.After)}, gl.WithContext(ctx))
		if err != nil {
			return workflows.ChangedFiles{}, fmt.Errorf("comparing the push to %s on gitlab: %w", e.Repo, err)
		}
		for _, d := range cmp.Diffs {
			if d != nil {
				add(d.OldPath, d.NewPath)
			}
		}
		out.Truncated = cmp.CompareTimeout
		return out, nil
	}
	return workflows.ChangedFiles{}, fmt.Errorf("listing changed files of %s on gitlab: the event is neither a merge request nor a push", e.Repo)
}

var _ workflows.ChangedFilesLookup = (*Reporter)(nil)
