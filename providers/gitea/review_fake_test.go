package gitea

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"

	"github.com/hookrun/hookrun/providers/forge/forgetest"
)

// fakeReviews is the pull review part of fakeGitea (set fakeGitea.rv):
// pull request 1's diff (forgetest.UnifiedDiff) and reviews, paged by
// Gitea's limit, each body decoded strictly.
type fakeReviews struct {
	valid   []int // main.go's new lines a comment may be on
	reviews []*fakeReview
	marked  []string // bodies review comments were edited to (PATCH .../issues/comments/{id})
}

type fakeReview struct {
	ID       int64
	Login    string
	Comments []fakeReviewComment
}

type fakeReviewComment struct {
	ID   int64
	Path string
	Line int
	Body string
}

var (
	rePullDiff      = regexp.MustCompile(`^/api/v1/repos/alice/demo/pulls/1\.diff$`)
	rePullReviews   = regexp.MustCompile(`^/api/v1/repos/alice/demo/pulls/1/reviews$`)
	reReviewComment = regexp.MustCompile(`^/api/v1/repos/alice/demo/pulls/1/reviews/(\d+)/comments$`)
	reEditComment   = regexp.MustCompile(`^/api/v1/repos/alice/demo/issues/comments/(\d+)$`)
)

// serveReview answers the review endpoints (f.mu held); false: not one
// of them.
func (f *fakeGitea) serveReview(w http.ResponseWriter, r *http.Request, p string, body []byte) bool {
	rv := f.rv
	switch m := r.Method; {
	case m == http.MethodGet && rePullDiff.MatchString(p):
		w.Header().Set("Content-Type", "text/plain;charset=utf-8")
		io.WriteString(w, forgetest.UnifiedDiff())
	case m == http.MethodGet && rePullReviews.MatchString(p):
		page, limit := 1, 30
		if v := r.URL.Query().Get("page"); v != "" {
			page = atoi(v)
		}
		if v := r.URL.Query().Get("limit"); v != "" {
			limit = min(atoi(v), 2) // the fake's pages are small, to exercise paging
		}
		from := min((page-1)*limit, len(rv.reviews))
		to := min(from+limit, len(rv.reviews))
		out := []any{}
		for _, x := range rv.reviews[from:to] {
			out = append(out, map[string]any{"id": x.ID, "state": "COMMENT", "comments_count": len(x.Comments),
				"user": map[string]any{"id": 2, "login": x.Login}, "commit_id": headSHA})
		}
		if to < len(rv.reviews) {
			w.Header().Set("Link", fmt.Sprintf(`<%s%s?page=%d&limit=%d>; rel="next"`, f.srv.URL, r.URL.Path, page+1, limit))
		}
		w.Header().Set("X-Total-Count", strconv.Itoa(len(rv.reviews)))
		f.json(w, http.StatusOK, out)
	case m == http.MethodGet && reReviewComment.MatchString(p):
		id := int64(atoi(reReviewComment.FindStringSubmatch(p)[1]))
		for _, x := range rv.reviews {
			if x.ID == id {
				out := []any{}
				for _, c := range x.Comments {
					out = append(out, map[string]any{"id": c.ID, "body": c.Body, "path": c.Path, "position": c.Line,
						"user": map[string]any{"id": 2, "login": x.Login}, "pull_request_review_id": x.ID})
				}
				f.json(w, http.StatusOK, out)
				return true
			}
		}
		f.json(w, http.StatusNotFound, map[string]string{"message": "review does not exist"})
	case m == http.MethodPost && rePullReviews.MatchString(p):
		var in struct {
			CommitID string `json:"commit_id"`
			Body     string `json:"body"`
			Event    string `json:"event"`
			Comments []struct {
				Path        string `json:"path"`
				NewPosition int    `json:"new_position"`
				Body        string `json:"body"`
			} `json:"comments"`
		}
		if !f.decode(w, body, &in) {
			return true
		}
		if in.Event != "COMMENT" || in.CommitID != headSHA || len(in.Comments) == 0 {
			f.json(w, http.StatusUnprocessableEntity, map[string]string{"message": fmt.Sprintf("review %s", body)})
			return true
		}
		f.nextID++
		x := &fakeReview{ID: f.nextID, Login: f.login}
		for _, c := range in.Comments {
			if c.Path != forgetest.PatchPath || !slices.Contains(rv.valid, c.NewPosition) || c.Body == "" {
				f.json(w, http.StatusUnprocessableEntity, map[string]string{"message": fmt.Sprintf("comment %+v not on the diff", c)})
				return true
			}
			f.nextID++
			x.Comments = append(x.Comments, fakeReviewComment{ID: f.nextID, Path: c.Path, Line: c.NewPosition, Body: c.Body})
		}
		rv.reviews = append(rv.reviews, x)
		f.json(w, http.StatusOK, map[string]any{"id": x.ID, "state": "COMMENT", "body": in.Body, "comments_count": len(x.Comments)})
	case m == http.MethodPatch && reEditComment.MatchString(p):
		// Review comments are issue comments of type code: edited
		// through the issue comments endpoint, by their poster or a
		// writer (the bot's token is its poster here).
		id := int64(atoi(reEditComment.FindStringSubmatch(p)[1]))
		c, login := rv.comment(id)
		if c == nil {
			return false // an issue comment (the sticky one)
		}
		var in struct {
			Body string `json:"body"`
		}
		if !f.decode(w, body, &in) {
			return true
		}
		if login != f.login {
			w.WriteHeader(http.StatusForbidden)
			return true
		}
		c.Body = in.Body
		rv.marked = append(rv.marked, in.Body)
		f.json(w, http.StatusOK, map[string]any{"id": c.ID, "body": c.Body, "user": map[string]any{"id": 2, "login": login},
			"pull_request_url": f.srv.URL + "/alice/demo/pulls/1"})
	default:
		return false
	}
	return true
}

// comment is the review comment id and its poster; nil if none.
func (rv *fakeReviews) comment(id int64) (*fakeReviewComment, string) {
	for _, x := range rv.reviews {
		for i := range x.Comments {
			if x.Comments[i].ID == id {
				return &x.Comments[i], x.Login
			}
		}
	}
	return nil, ""
}

// reviewView is the conformance suite's view of fakeReviews.
type reviewView struct{ f *fakeGitea }

func (v reviewView) Inline() map[string]string {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	out := map[string]string{}
	for _, x := range v.f.rv.reviews {
		if x.Login != v.f.login {
			continue
		}
		for _, c := range x.Comments {
			out[fmt.Sprintf("%s:%d", c.Path, c.Line)] = c.Body
		}
	}
	return out
}

// Marked are the bodies the review comments of gone findings were
// edited to.
func (v reviewView) Marked() []string {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	return slices.Clone(v.f.rv.marked)
}

func (v reviewView) ReviewRequests() int { return v.f.reqs.Count("POST", `.*/pulls/\d+/reviews`) }
