package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/ratelimit"
	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/runner/contract"
)

// Review implements forge.Reviewer on GitLab: the merge request's diff
// refs (GET /projects/:id/merge_requests/:iid), its diff (GET
// .../merge_requests/:iid/diffs, every page), the earlier finding
// discussions (GET .../merge_requests/:iid/discussions, every page, the
// bot's unresolved ones), one discussion per new finding (POST
// .../discussions with a text position: base, start and head SHA,
// new_path, new_line, and old_line on a context line), and each gone
// finding's discussion resolved (PUT .../discussions/:id resolved=true).
func (r *Reporter) Review(ctx context.Context, rep *contract.RunReport) (*review.Summary, error) {
	if !forge.Wants(rep) {
		return nil, nil
	}
	ev := rep.Event
	if ev.Repo == "" {
		return nil, fmt.Errorf("reviewing on gitlab: event has no project")
	}
	ctx = ratelimit.Final(ctx)
	var pid any = ev.Repo
	if ev.ProjectID > 0 {
		pid = ev.ProjectID
	}
	mr := mergeRequest{r: r, pid: pid, name: ev.Repo, iid: int64(ev.PullRequest.Number)}
	var refs *gl.MergeRequestDiffRefs
	p, err := review.Prepare(ctx, rep, func(ctx context.Context) (review.Diff, error) {
		// The diff refs of the merge request position each comment.
		m, _, err := r.api.MergeRequests.GetMergeRequest(pid, mr.iid, nil, gl.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", mr, err)
		}
		refs = &m.DiffRefs
		return mr.diff(ctx)
	}, mr.earlier)
	sum, diff, plan, gone, earlier := p.Sum, p.Diff, p.Plan, p.Gone, p.Earlier
	if err != nil {
		return sum, err
	}
	for _, c := range plan.Comments {
		pos := &gl.PositionOptions{PositionType: gl.Ptr("text"), BaseSHA: gl.Ptr(refs.BaseSha), StartSHA: gl.Ptr(refs.StartSha),
			HeadSHA: gl.Ptr(refs.HeadSha), NewPath: gl.Ptr(c.Finding.Path), OldPath: gl.Ptr(c.Finding.Path), NewLine: gl.Ptr(int64(c.StartLine))}
		if fd := diff[c.Finding.Path]; fd != nil && !fd.Added[c.StartLine] {
			pos.OldLine = gl.Ptr(int64(fd.Old[c.StartLine]))
		}
		if _, _, err := r.api.Discussions.CreateMergeRequestDiscussion(pid, mr.iid, &gl.CreateMergeRequestDiscussionOptions{
			Body: inert(review.Body(c, review.SuggestionRange)), Position: pos}, gl.WithContext(ctx)); err != nil {
			err = fmt.Errorf("commenting on %s line %d of %s: %w", c.Finding.Path, c.StartLine, mr, err)
			var er *gl.ErrorResponse
			if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusBadRequest {
				// GitLab refuses the position (a line no longer in the
				// diff after a new push): retrying will not help; the
				// run's note says so.
				sum.Error = err.Error()
				continue
			}
			return sum, err
		}
		sum.Posted++
	}
	if !review.MarksGone(rep.Status) {
		return sum, nil
	}
	for _, fp := range gone {
		id := earlier[fp]
		if _, _, err := r.api.Discussions.ResolveMergeRequestDiscussion(pid, mr.iid, id,
			&gl.ResolveMergeRequestDiscussionOptions{Resolved: gl.Ptr(true)}, gl.WithContext(ctx)); err != nil {
			return sum, fmt.Errorf("resolving discussion %s of %s: %w", id, mr, err)
		}
	}
	return sum, nil
}

// mergeRequest is the review of one merge request.
type mergeRequest struct {
	r    *Reporter
	pid  any
	name string
	iid  int64
}

func (m mergeRequest) String() string { return fmt.Sprintf("%s!%d", m.name, m.iid) }

// diff is the merge request's diff, every page.
func (m mergeRequest) diff(ctx context.Context) (review.Diff, error) {
	d := review.Diff{}
	opt := &gl.ListMergeRequestDiffsOptions{ListOptions: gl.ListOptions{PerPage: filesPerPage, Page: 1}}
	for count := 0; ; {
		diffs, resp, err := m.r.api.MergeRequests.ListMergeRequestDiffs(m.pid, m.iid, opt, gl.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("listing the diffs of %s: %w", m, err)
		}
		for _, x := range diffs {
			if x != nil && !x.DeletedFile {
				d[x.NewPath] = review.ParsePatch(x.Diff)
			}
		}
		count += len(diffs)
		if resp.NextPage == 0 || count >= MaxMergeRequestFiles {
			return d, nil
		}
		opt.Page = resp.NextPage
	}
}

// earlier are the discussion ids of the bot's unresolved finding
// discussions by key (review.KeyOf: every workflow's; review.Decide keeps
// the run's workflow's).
func (m mergeRequest) earlier(ctx context.Context) (map[string]string, error) {
	bot := m.r.bot(ctx)
	out := map[string]string{}
	opt := &gl.ListMergeRequestDiscussionsOptions{ListOptions: gl.ListOptions{PerPage: 100, Page: 1}}
	for {
		list, resp, err := m.r.api.Discussions.ListMergeRequestDiscussions(m.pid, m.iid, opt, gl.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("listing the discussions of %s: %w", m, err)
		}
		for _, d := range list {
			if d == nil || len(d.Notes) == 0 || d.Notes[0] == nil {
				continue
			}
			n := d.Notes[0]
			if bot != 0 && n.Author.ID != bot || n.Resolved {
				continue
			}
			if fp := review.KeyOf(n.Body); fp != "" {
				out[fp] = d.ID
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}
