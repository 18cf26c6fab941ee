package github

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/ratelimit"
	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/runner/contract"
)

// maxReviewDiff bounds the whole diff read for a review (Dialect.PullReviews).
const maxReviewDiff = 20 << 20

// Review implements forge.Reviewer on GitHub and on a forge with
// Dialect.PullReviews. GitHub: the diff
// from GET /repos/{o}/{r}/pulls/{n}/files (every page, each file's
// patch), the earlier comments from GET .../pulls/{n}/comments (every
// page, the bot's), one POST .../pulls/{n}/reviews of event COMMENT with
// comments (path, line, side RIGHT, start_line and start_side for a
// range), and each gone finding's comment edited (PATCH
// .../pulls/comments/{id}) to say "Fixed in <sha>". PullReviews: the diff from
// GET .../pulls/{n}.diff, the earlier comments from the bot's reviews
// (GET .../pulls/{n}/reviews, .../reviews/{id}/comments), one POST
// .../pulls/{n}/reviews of event COMMENT with comments (path,
// new_position), and each gone finding's comment edited (PATCH
// .../issues/comments/{id}: such a forge keeps review comments with the
// issue's, and edits them there) to say "Fixed in <sha>".
func (r *Reporter) Review(ctx context.Context, rep *contract.RunReport) (*review.Summary, error) {
	if !forge.Wants(rep) {
		return nil, nil
	}
	ev := rep.Event
	owner, repo, ok := strings.Cut(ev.Repo, "/")
	if !ok || owner == "" || repo == "" {
		return nil, fmt.Errorf("reviewing on %s: repository %q is not owner/name", r.cfg.Forge, ev.Repo)
	}
	ctx = ratelimit.Final(ctx)
	c, err := r.client(ev.InstallationID)
	if err != nil {
		return nil, fmt.Errorf("reviewing on %s: %w", r.cfg.Forge, err)
	}
	pr := &pullReview{r: r, c: c, owner: owner, repo: repo, number: ev.PullRequest.Number}
	p, err := review.Prepare(ctx, rep, pr.diff, pr.earlier)
	sum, plan, gone, earlier := p.Sum, p.Plan, p.Gone, p.Earlier
	if err != nil {
		return sum, err
	}
	if len(plan.Comments) > 0 {
		if err := pr.post(ctx, headSHA(rep), rep, plan); err != nil {
			if isStatus(err, http.StatusUnprocessableEntity) {
				// The forge refuses the review itself (a line no longer in
				// the diff after a new push): retrying will not help; the
				// run's comment says so.
				sum.Error = err.Error()
				return sum, nil
			}
			return sum, err
		}
		sum.Posted = len(plan.Comments)
	}
	if review.MarksGone(rep.Status) {
		for _, fp := range gone {
			cm := earlier[fp]
			if err := pr.editComment(ctx, cm.ID, cm.Body+review.Fixed(headSHA(rep))); err != nil {
				return sum, err
			}
		}
	}
	return sum, nil
}

// pullReview is the review of one pull request.
type pullReview struct {
	r           *Reporter
	c           *gh.Client
	owner, repo string
	number      int
}

func (p *pullReview) String() string { return fmt.Sprintf("%s/%s#%d", p.owner, p.repo, p.number) }

// diff is the pull request's diff.
func (p *pullReview) diff(ctx context.Context) (review.Diff, error) {
	if p.r.dialect().PullReviews {
		u := fmt.Sprintf("repos/%s/%s/pulls/%d.diff", p.owner, p.repo, p.number)
		var text string
		if err := p.r.call(ctx, func() error {
			req, err := p.c.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			var b strings.Builder
			if _, err := p.c.Do(ctx, req, &limitedWriter{w: &b, n: maxReviewDiff}); err != nil {
				return err
			}
			text = b.String()
			return nil
		}); err != nil {
			return nil, fmt.Errorf("reading the diff of %s: %w", p, err)
		}
		return review.ParseUnified(text), nil
	}
	d := review.Diff{}
	opt := &gh.ListOptions{PerPage: filesPerPage, Page: 1}
	for count := 0; ; {
		files, resp, err := callPage(ctx, p.r, func() ([]*gh.CommitFile, *gh.Response, error) {
			return p.c.PullRequests.ListFiles(ctx, p.owner, p.repo, p.number, opt)
		})
		if err != nil {
			return nil, fmt.Errorf("listing the files of %s: %w", p, err)
		}
		for _, f := range files {
			if f.GetStatus() != "removed" {
				d[f.GetFilename()] = review.ParsePatch(f.GetPatch())
			}
		}
		count += len(files)
		if resp.NextPage == 0 || count >= MaxPullFiles {
			return d, nil
		}
		opt.Page = resp.NextPage
	}
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(b []byte) (int, error) {
	k := len(b)
	if len(b) > l.n {
		b = b[:l.n]
	}
	l.n -= len(b)
	if _, err := l.w.Write(b); err != nil {
		return 0, err
	}
	return k, nil
}

// earlierComment is a finding comment an earlier run posted.
type earlierComment struct {
	ID   int64
	Body string
}

// earlier are the bot's finding comments on the pull request by key
// (review.KeyOf: every workflow's; review.Decide keeps the run's
// workflow's), those marked fixed left out.
func (p *pullReview) earlier(ctx context.Context) (map[string]earlierComment, error) {
	login := p.r.botLogin(ctx)
	out := map[string]earlierComment{}
	add := func(id int64, user, body string) {
		if login != "" && !strings.EqualFold(user, login) || strings.Contains(body, review.FixedMarker) {
			return
		}
		if fp := review.KeyOf(body); fp != "" {
			out[fp] = earlierComment{ID: id, Body: body}
		}
	}
	if p.r.dialect().PullReviews {
		return out, p.reviewsEarlier(ctx, login, add)
	}
	opt := &gh.PullRequestListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100, Page: 1}}
	for {
		list, resp, err := callPage(ctx, p.r, func() ([]*gh.PullRequestComment, *gh.Response, error) {
			return p.c.PullRequests.ListComments(ctx, p.owner, p.repo, p.number, opt)
		})
		if err != nil {
			return nil, fmt.Errorf("listing the review comments of %s: %w", p, err)
		}
		for _, cm := range list {
			add(cm.GetID(), cm.GetUser().GetLogin(), cm.GetBody())
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// listedReview is what hookrun reads of a pull review listed review by
// review (Dialect.PullReviews).
type listedReview struct {
	ID   int64 `json:"id"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	CommentsCount int `json:"comments_count"`
}

// listedReviewComment is what hookrun reads of a listed review's comment.
type listedReviewComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
}

// reviewsEarlier adds the comments of the bot's earlier reviews, read
// review by review.
func (p *pullReview) reviewsEarlier(ctx context.Context, login string, add func(int64, string, string)) error {
	for page := 1; page > 0; {
		var list []listedReview
		next, err := p.get(ctx, fmt.Sprintf("repos/%s/%s/pulls/%d/reviews?limit=50&page=%d", p.owner, p.repo, p.number, page), &list)
		if err != nil {
			return fmt.Errorf("listing the reviews of %s: %w", p, err)
		}
		for _, rv := range list {
			if login != "" && !strings.EqualFold(rv.User.Login, login) || rv.CommentsCount == 0 {
				continue
			}
			var cms []listedReviewComment
			if _, err := p.get(ctx, fmt.Sprintf("repos/%s/%s/pulls/%d/reviews/%d/comments", p.owner, p.repo, p.number, rv.ID), &cms); err != nil {
				return fmt.Errorf("listing the comments of review %d of %s: %w", rv.ID, p, err)
			}
			for _, cm := range cms {
				add(cm.ID, cm.User.Login, cm.Body)
			}
		}
		page = next
	}
	return nil
}

// get reads u into v; next is the page the Link header names next (0:
// none).
func (p *pullReview) get(ctx context.Context, u string, v any) (next int, err error) {
	err = p.r.call(ctx, func() error {
		req, err := p.c.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := p.c.Do(ctx, req, v)
		if resp != nil {
			next = resp.NextPage
		}
		return err
	})
	return next, err
}

// reviewComment is one comment of a GitHub review request.
type reviewComment struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Side      string `json:"side"`
	StartLine int    `json:"start_line,omitempty"`
	StartSide string `json:"start_side,omitempty"`
	Body      string `json:"body"`
}

// positionComment is one comment of a review request placed by its new
// position (Dialect.PullReviews).
type positionComment struct {
	Path        string `json:"path"`
	NewPosition int    `json:"new_position"`
	Body        string `json:"body"`
}

// reviewRequest is the body of POST .../pulls/{n}/reviews.
type reviewRequest struct {
	CommitID string `json:"commit_id,omitempty"`
	Body     string `json:"body"`
	Event    string `json:"event"`
	Comments any    `json:"comments"`
}

// post creates the review of plan's comments.
func (p *pullReview) post(ctx context.Context, sha string, rep *contract.RunReport, plan review.Plan) error {
	body := fmt.Sprintf("%s\n**hookrun · %s** · %d finding(s) on the lines this pull request changed", review.RunMarker(rep.RunID),
		review.Escape(rep.Workflow.Name), len(plan.Comments))
	if u := render.RunURL(p.r.cfg.RunURL, rep.RunID); u != "" {
		body += " · [run](" + u + ")"
	}
	in := reviewRequest{CommitID: sha, Body: body, Event: "COMMENT"}
	if p.r.dialect().PullReviews {
		var cms []positionComment
		for _, c := range plan.Comments {
			cms = append(cms, positionComment{Path: c.Finding.Path, NewPosition: c.Line, Body: review.Body(c, review.FencedDiff)})
		}
		in.Comments = cms
	} else {
		var cms []reviewComment
		for _, c := range plan.Comments {
			rc := reviewComment{Path: c.Finding.Path, Line: c.Line, Side: "RIGHT", Body: review.Body(c, review.Suggestion)}
			if c.StartLine < c.Line {
				rc.StartLine, rc.StartSide = c.StartLine, "RIGHT"
			}
			cms = append(cms, rc)
		}
		in.Comments = cms
	}
	u := fmt.Sprintf("repos/%s/%s/pulls/%d/reviews", p.owner, p.repo, p.number)
	if err := p.r.call(ctx, func() error {
		req, err := p.c.NewRequest(http.MethodPost, u, in)
		if err != nil {
			return err
		}
		_, err = p.c.Do(ctx, req, nil)
		return err
	}); err != nil {
		return fmt.Errorf("posting the review of %s: %w", p, err)
	}
	return nil
}

// editComment rewrites a review comment's body: GitHub's pulls/comments
// endpoint, or with Dialect.PullReviews the issues/comments one.
func (p *pullReview) editComment(ctx context.Context, id int64, body string) error {
	if err := p.r.call(ctx, func() error {
		if p.r.dialect().PullReviews {
			req, err := p.c.NewRequest(http.MethodPatch, fmt.Sprintf("repos/%s/%s/issues/comments/%d", p.owner, p.repo, id), map[string]string{"body": body})
			if err != nil {
				return err
			}
			resp, err := p.c.Do(ctx, req, nil)
			if err == nil && resp.StatusCode == http.StatusNoContent {
				// The forge's answer for a comment it keeps no text of.
				return fmt.Errorf("%s answered 204: the comment was not edited", p.r.cfg.Forge)
			}
			return err
		}
		_, _, err := p.c.PullRequests.EditComment(ctx, p.owner, p.repo, id, &gh.PullRequestComment{Body: gh.String(body)})
		return err
	}); err != nil {
		return fmt.Errorf("editing review comment %d of %s: %w", id, p, err)
	}
	return nil
}
