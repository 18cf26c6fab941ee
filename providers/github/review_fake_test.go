package github

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/providers/internal/sticky/stickytest"
)

// fakeReviews is the pull request review part of fakeGitHub (set
// fakeGitHub.rv): pull request 1's files with their patches, its review
// comments, reviews and check runs, with GitHub's checks of each body.
type fakeReviews struct {
	files    []map[string]any
	valid    map[string][]int // path → the new lines a comment may be on (the diff's)
	comments []*fakeReviewComment
	reviews  int
	marked   []string
	checks   []*fakeCheckRun
	patches  []string // PATCH bodies of check runs, in order

	// failPatch answers the check run PATCHes it names (by their order,
	// from 1, counting those it failed) with a status instead: 403 as
	// GitHub's secondary rate limit with Retry-After: retryAfter, else
	// that status with an error message. Nothing of a failed PATCH is kept.
	failPatch  map[int]int
	retryAfter string
	patchN     int
}

type fakeReviewComment struct {
	ID                    int64
	Path                  string
	Line, StartLine       int
	Login, Body, CommitID string
}

// newReviewFake is a fakeGitHub whose pull request 1 changes main.go by
// forgetest.Patch, after five files of one-line patches (the files API
// pages by 3: main.go is on page 2).
func newReviewFake(f *fakeGitHub) *fakeReviews {
	rv := &fakeReviews{valid: map[string][]int{forgetest.PatchPath: {10, 11, 12, 13, 14, 15, 39, 40, 41}}}
	for i := range 5 {
		rv.files = append(rv.files, map[string]any{"sha": "bbcd538c8e72b8c175046e27cc8f907076331401", "filename": fmt.Sprintf("pad%d.txt", i),
			"status": "modified", "additions": 1, "deletions": 1, "changes": 2, "patch": "@@ -1 +1 @@\n-a\n+b"})
	}
	rv.files = append(rv.files, map[string]any{"sha": "3a0f86fb8db8eea7ccbb9a95f325ddbedfb25e15", "filename": forgetest.PatchPath,
		"status": "modified", "additions": 3, "deletions": 1, "changes": 4, "patch": forgetest.Patch})
	f.rv = rv
	return rv
}

var (
	reReviewFiles   = regexp.MustCompile(`^/repos/Codertocat/Hello-World/pulls/1/files$`)
	rePullComments  = regexp.MustCompile(`^/repos/Codertocat/Hello-World/pulls/1/comments$`)
	reReviews       = regexp.MustCompile(`^/repos/Codertocat/Hello-World/pulls/1/reviews$`)
	rePullCommentID = regexp.MustCompile(`^/repos/Codertocat/Hello-World/pulls/comments/(\d+)$`)
	reCheckRuns     = regexp.MustCompile(`^/repos/Codertocat/Hello-World/check-runs$`)
	reCheckRun      = regexp.MustCompile(`^/repos/Codertocat/Hello-World/check-runs/(\d+)$`)
	reCommitChecks  = regexp.MustCompile(`^/repos/Codertocat/Hello-World/commits/([0-9a-f]{40})/check-runs$`)
)

// serveReview answers the review and checks endpoints; false: not one of
// them. Called with the request authenticated.
func (f *fakeGitHub) serveReview(w http.ResponseWriter, r *http.Request, path string, body []byte) bool {
	rv := f.rv
	switch {
	case reReviewFiles.MatchString(path) && r.Method == "GET":
		f.mu.Lock()
		all := slices.Clone(rv.files)
		f.mu.Unlock()
		f.page(w, r, all)
	case rePullComments.MatchString(path) && r.Method == "GET":
		f.mu.Lock()
		var all []map[string]any
		for _, c := range rv.comments {
			all = append(all, map[string]any{"id": c.ID, "body": c.Body, "path": c.Path, "line": c.Line, "side": "RIGHT",
				"commit_id": c.CommitID, "user": map[string]any{"login": c.Login, "type": "User"}})
		}
		f.mu.Unlock()
		f.page(w, r, all)
	case reReviews.MatchString(path) && r.Method == "POST":
		var in struct {
			CommitID string `json:"commit_id"`
			Body     string `json:"body"`
			Event    string `json:"event"`
			Comments []struct {
				Path      string  `json:"path"`
				Line      int     `json:"line"`
				Side      string  `json:"side"`
				StartLine *int    `json:"start_line"`
				StartSide *string `json:"start_side"`
				Body      string  `json:"body"`
			} `json:"comments"`
		}
		if err := stickytest.StrictJSON(body, &in); err != nil || in.Event != "COMMENT" || in.CommitID != sha || len(in.Comments) == 0 {
			f.fail(w, 422, "Unprocessable Entity", fmt.Sprintf("review body %s: %v", body, err))
			return true
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		var add []*fakeReviewComment
		for _, c := range in.Comments {
			if c.Side != "RIGHT" || !slices.Contains(rv.valid[c.Path], c.Line) || c.Body == "" ||
				c.StartLine != nil && (c.StartSide == nil || *c.StartSide != "RIGHT" || *c.StartLine >= c.Line || !slices.Contains(rv.valid[c.Path], *c.StartLine)) {
				f.fail(w, 422, "Unprocessable Entity", fmt.Sprintf("pull_request_review_thread.line must be part of the diff: %+v", c))
				return true
			}
			f.nextID++
			fc := &fakeReviewComment{ID: f.nextID, Path: c.Path, Line: c.Line, Login: f.bot, Body: c.Body, CommitID: in.CommitID}
			if c.StartLine != nil {
				fc.StartLine = *c.StartLine
			}
			add = append(add, fc)
		}
		rv.comments = append(rv.comments, add...)
		rv.reviews++
		f.nextID++
		f.json(w, 200, map[string]any{"id": f.nextID, "state": "COMMENTED", "body": in.Body, "commit_id": in.CommitID, "user": map[string]any{"login": f.bot}})
	case rePullCommentID.MatchString(path) && r.Method == "PATCH":
		id, _ := strconv.ParseInt(rePullCommentID.FindStringSubmatch(path)[1], 10, 64)
		var in struct {
			Body string `json:"body"`
		}
		if err := stickytest.StrictJSON(body, &in); err != nil || in.Body == "" {
			f.fail(w, 422, "Unprocessable Entity", fmt.Sprintf("comment body %s: %v", body, err))
			return true
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range rv.comments {
			if c.ID == id {
				if c.Login != f.bot {
					f.fail(w, 403, "Forbidden", "")
					return true
				}
				c.Body = in.Body
				rv.marked = append(rv.marked, in.Body)
				f.json(w, 200, map[string]any{"id": c.ID, "body": c.Body, "path": c.Path, "line": c.Line})
				return true
			}
		}
		f.fail(w, 404, "Not Found", "")
	default:
		return f.serveChecks(w, r, path, body)
	}
	return true
}

// page answers a list with GitHub's paging by the fake's page size.
func (f *fakeGitHub) page(w http.ResponseWriter, r *http.Request, all []map[string]any) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 || per > 100 {
		per = 30
	}
	per = min(per, f.pageSz)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	if hi < len(all) {
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?page=%d&per_page=%d>; rel="next"`, f.srv.URL, r.URL.Path, page+1, per))
	}
	f.json(w, 200, append([]map[string]any{}, all[lo:hi]...))
}

// reviewView is the conformance suite's view of fakeReviews.
type reviewView struct{ f *fakeGitHub }

func (v reviewView) Inline() map[string]string {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	out := map[string]string{}
	for _, c := range v.f.rv.comments {
		if c.Login == v.f.bot {
			out[fmt.Sprintf("%s:%d", c.Path, c.Line)] = strings.Split(c.Body, "\n\n<!-- hookrun:fixed -->")[0]
		}
	}
	return out
}

func (v reviewView) Marked() []string {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	return slices.Clone(v.f.rv.marked)
}

func (v reviewView) ReviewRequests() int { return v.f.count("POST", `.*/pulls/\d+/reviews`) }

// fakeCheckRun is one check run the fake holds. Its annotations are
// appended to by every request that carries some, as GitHub does.
type fakeCheckRun struct {
	ID                             int64
	Name, HeadSHA, ExternalID      string
	Status, Conclusion, DetailsURL string
	Title, Summary, Text           string
	Annotations                    []map[string]any
}

// fakeCheckOutput is a check run's output as GitHub takes it.
type fakeCheckOutput struct {
	Title       string `json:"title"`
	Summary     string `json:"summary"`
	Text        string `json:"text"`
	Annotations []struct {
		Path            string `json:"path"`
		StartLine       int    `json:"start_line"`
		EndLine         int    `json:"end_line"`
		AnnotationLevel string `json:"annotation_level"`
		Message         string `json:"message"`
		Title           string `json:"title"`
	} `json:"annotations"`
}

// ok applies GitHub's rules: a title and a summary, at most 50
// annotations, each with a path, lines, a message and a known level.
func (o *fakeCheckOutput) ok() bool {
	if o == nil {
		return true
	}
	if o.Title == "" || o.Summary == "" || len(o.Annotations) > 50 {
		return false
	}
	for _, a := range o.Annotations {
		if a.Path == "" || a.StartLine <= 0 || a.EndLine < a.StartLine || a.Message == "" ||
			!slices.Contains([]string{"notice", "warning", "failure"}, a.AnnotationLevel) {
			return false
		}
	}
	return true
}

// addTo sets c's output to o, appending o's annotations to c's.
func (o *fakeCheckOutput) addTo(c *fakeCheckRun) {
	if o == nil {
		return
	}
	c.Title, c.Summary, c.Text = o.Title, o.Summary, o.Text
	for _, a := range o.Annotations {
		c.Annotations = append(c.Annotations, map[string]any{"path": a.Path, "start_line": a.StartLine, "level": a.AnnotationLevel, "message": a.Message})
	}
}

// serveChecks answers the checks endpoints; false: not one of them.
// GitHub's rules: a name and a 40-hex head_sha, statuses and conclusions
// from their lists, at most 50 annotations per request, conclusion with
// completed.
func (f *fakeGitHub) serveChecks(w http.ResponseWriter, r *http.Request, path string, body []byte) bool {
	rv := f.rv
	switch {
	case reCheckRuns.MatchString(path) && r.Method == "POST":
		var in struct {
			Name       string           `json:"name"`
			HeadSHA    string           `json:"head_sha"`
			Status     string           `json:"status"`
			ExternalID string           `json:"external_id"`
			DetailsURL string           `json:"details_url"`
			Output     *fakeCheckOutput `json:"output"`
		}
		if err := stickytest.StrictJSON(body, &in); err != nil || in.Name == "" || !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(in.HeadSHA) ||
			!slices.Contains([]string{"queued", "in_progress"}, in.Status) || !in.Output.ok() {
			f.fail(w, 422, "Unprocessable Entity", fmt.Sprintf("check run %s: %v", body, err))
			return true
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.nextID++
		c := &fakeCheckRun{ID: f.nextID, Name: in.Name, HeadSHA: in.HeadSHA, ExternalID: in.ExternalID, Status: in.Status, DetailsURL: in.DetailsURL}
		in.Output.addTo(c)
		rv.checks = append(rv.checks, c)
		f.json(w, 201, map[string]any{"id": c.ID, "name": c.Name, "head_sha": c.HeadSHA, "status": c.Status, "external_id": c.ExternalID})
	case reCheckRun.MatchString(path) && r.Method == "PATCH":
		id, _ := strconv.ParseInt(reCheckRun.FindStringSubmatch(path)[1], 10, 64)
		f.patchCheckRun(w, id, body)
	case reCommitChecks.MatchString(path) && r.Method == "GET":
		sha := reCommitChecks.FindStringSubmatch(path)[1]
		name := r.URL.Query().Get("check_name")
		f.mu.Lock()
		var all []map[string]any
		for _, c := range rv.checks {
			if c.HeadSHA == sha && (name == "" || c.Name == name) {
				all = append(all, map[string]any{"id": c.ID, "name": c.Name, "head_sha": c.HeadSHA, "external_id": c.ExternalID, "status": c.Status,
					"output": map[string]any{"title": nilIfEmpty(c.Title), "summary": nilIfEmpty(c.Summary), "text": nilIfEmpty(c.Text),
						"annotations_count": len(c.Annotations), "annotations_url": fmt.Sprintf("%s/api/v3/repos/%s/check-runs/%d/annotations", f.srv.URL, f.repo, c.ID)}})
			}
		}
		f.mu.Unlock()
		f.json(w, 200, map[string]any{"total_count": len(all), "check_runs": append([]map[string]any{}, all...)})
	default:
		return false
	}
	return true
}

// nilIfEmpty is s, or JSON null for "" (as GitHub shows an unset field).
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// patchCheckRun answers PATCH .../check-runs/{id}.
func (f *fakeGitHub) patchCheckRun(w http.ResponseWriter, id int64, body []byte) {
	rv := f.rv
	var in struct {
		Status     string           `json:"status"`
		Conclusion string           `json:"conclusion"`
		DetailsURL string           `json:"details_url"`
		Output     *fakeCheckOutput `json:"output"`
	}
	err := stickytest.StrictJSON(body, &in)
	if err != nil || in.Status != "" && in.Status != "completed" || (in.Status == "completed") != (in.Conclusion != "") ||
		in.Conclusion != "" && !slices.Contains([]string{"success", "failure", "neutral", "cancelled", "timed_out", "skipped", "action_required"}, in.Conclusion) ||
		!in.Output.ok() {
		f.fail(w, 422, "Unprocessable Entity", fmt.Sprintf("check run update %s: %v", body, err))
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rv.patchN++
	switch code := rv.failPatch[rv.patchN]; {
	case code == 403:
		f.secondaryLimit(w, rv.retryAfter)
		return
	case code != 0:
		f.fail(w, code, http.StatusText(code), "")
		return
	}
	for _, c := range rv.checks {
		if c.ID == id {
			if in.Status != "" {
				c.Status, c.Conclusion = in.Status, in.Conclusion
			}
			if in.DetailsURL != "" {
				c.DetailsURL = in.DetailsURL
			}
			in.Output.addTo(c)
			n := 0
			if in.Output != nil {
				n = len(in.Output.Annotations)
			}
			rv.patches = append(rv.patches, fmt.Sprintf("%s/%s/%d", in.Status, in.Conclusion, n))
			f.json(w, 200, map[string]any{"id": c.ID, "status": c.Status, "conclusion": c.Conclusion})
			return
		}
	}
	f.fail(w, 404, "Not Found", "")
}
