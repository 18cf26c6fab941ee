package gitlab

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"

	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/providers/internal/sticky/stickytest"
)

// fakeDiscussions is the merge request discussions part of fakeGitLab
// (set fakeGitLab.rv): merge request 1's diff refs and diffs
// (forgetest.Patch on main.go, after five one-line files: the diffs API
// pages by 3), its discussions, with GitLab's checks of each position.
type fakeDiscussions struct {
	base, start, head string
	diffs             []map[string]any
	added             []int       // main.go's added new lines
	context           map[int]int // main.go's context lines: new → old
	list              []*fakeDiscussion
	created           int
	resolved          []string
}

type fakeDiscussion struct {
	ID       string
	Body     string
	AuthorID int64
	NewLine  int
	Resolved bool
}

func newDiscussionsFake(f *fakeGitLab) *fakeDiscussions {
	rv := &fakeDiscussions{base: "1111111111111111111111111111111111111111", start: "2222222222222222222222222222222222222222", head: sha,
		added: []int{13, 14, 40}, context: map[int]int{10: 10, 11: 11, 12: 12, 15: 14, 39: 37, 41: 38}}
	for i := range 5 {
		rv.diffs = append(rv.diffs, map[string]any{"old_path": fmt.Sprintf("pad%d.txt", i), "new_path": fmt.Sprintf("pad%d.txt", i),
			"a_mode": "100644", "b_mode": "100644", "diff": "@@ -1 +1 @@\n-a\n+b\n", "new_file": false, "renamed_file": false, "deleted_file": false})
	}
	rv.diffs = append(rv.diffs, map[string]any{"old_path": forgetest.PatchPath, "new_path": forgetest.PatchPath,
		"a_mode": "100644", "b_mode": "100644", "diff": forgetest.Patch, "new_file": false, "renamed_file": false, "deleted_file": false})
	f.rv = rv
	return rv
}

var (
	reReviewMR      = regexp.MustCompile(`^/projects/5/merge_requests/1$`)
	reReviewDiffs   = regexp.MustCompile(`^/projects/5/merge_requests/1/diffs$`)
	reDiscussions   = regexp.MustCompile(`^/projects/5/merge_requests/1/discussions$`)
	reDiscussionOne = regexp.MustCompile(`^/projects/5/merge_requests/1/discussions/([0-9a-f]+)$`)
)

// serveReview answers the review endpoints; false: not one of them.
func (f *fakeGitLab) serveReview(w http.ResponseWriter, r *http.Request, path string, body []byte) bool {
	rv := f.rv
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case reReviewMR.MatchString(path) && r.Method == "GET":
		f.json(w, 200, map[string]any{"id": 101, "iid": 1, "project_id": 5, "state": "opened", "sha": rv.head,
			"source_branch": "feature", "target_branch": "main",
			"diff_refs": map[string]any{"base_sha": rv.base, "start_sha": rv.start, "head_sha": rv.head}})
	case reReviewDiffs.MatchString(path) && r.Method == "GET":
		f.page(w, r, rv.diffs)
	case reDiscussions.MatchString(path) && r.Method == "GET":
		var all []map[string]any
		for _, d := range rv.list {
			all = append(all, map[string]any{"id": d.ID, "individual_note": false, "notes": []any{map[string]any{
				"id": 1, "type": "DiffNote", "body": d.Body, "system": false, "resolvable": true, "resolved": d.Resolved,
				"author":   map[string]any{"id": d.AuthorID, "username": f.bot},
				"position": map[string]any{"position_type": "text", "new_path": forgetest.PatchPath, "new_line": d.NewLine}}}})
		}
		f.page(w, r, all)
	case reDiscussions.MatchString(path) && r.Method == "POST":
		var in struct {
			Body     string `json:"body"`
			Position struct {
				BaseSHA      string `json:"base_sha"`
				StartSHA     string `json:"start_sha"`
				HeadSHA      string `json:"head_sha"`
				PositionType string `json:"position_type"`
				NewPath      string `json:"new_path"`
				OldPath      string `json:"old_path"`
				NewLine      int    `json:"new_line"`
				OldLine      *int   `json:"old_line"`
			} `json:"position"`
		}
		err := stickytest.StrictJSON(body, &in)
		p := in.Position
		old, isContext := rv.context[p.NewLine]
		ok := err == nil && in.Body != "" && p.PositionType == "text" && p.BaseSHA == rv.base && p.StartSHA == rv.start && p.HeadSHA == rv.head &&
			p.NewPath == forgetest.PatchPath && p.OldPath == forgetest.PatchPath &&
			(slices.Contains(rv.added, p.NewLine) && p.OldLine == nil || isContext && p.OldLine != nil && *p.OldLine == old)
		if !ok {
			f.fail(w, 400, "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}", fmt.Sprintf("discussion %s: %v", body, err))
			return true
		}
		f.nextID++
		d := &fakeDiscussion{ID: fmt.Sprintf("%040x", f.nextID), Body: in.Body, AuthorID: f.botID, NewLine: p.NewLine}
		rv.list = append(rv.list, d)
		rv.created++
		f.json(w, 201, map[string]any{"id": d.ID, "individual_note": false, "notes": []any{map[string]any{"id": f.nextID, "body": d.Body}}})
	case reDiscussionOne.MatchString(path) && r.Method == "PUT":
		id := reDiscussionOne.FindStringSubmatch(path)[1]
		var in struct {
			Resolved *bool `json:"resolved"`
		}
		if err := stickytest.StrictJSON(body, &in); err != nil || in.Resolved == nil {
			f.fail(w, 400, "400 Bad request - resolved is missing", string(body))
			return true
		}
		for _, d := range rv.list {
			if d.ID == id {
				d.Resolved = *in.Resolved
				rv.resolved = append(rv.resolved, d.Body)
				f.json(w, 200, map[string]any{"id": d.ID, "individual_note": false, "notes": []any{}})
				return true
			}
		}
		f.fail(w, 404, "404 Not found", "")
	default:
		return false
	}
	return true
}

// page answers a list with GitLab's paging headers by the fake's page
// size. Called with f.mu held.
func (f *fakeGitLab) page(w http.ResponseWriter, r *http.Request, all []map[string]any) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 20
	}
	per = min(per, f.pageSz)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	w.Header().Set("X-Page", strconv.Itoa(page))
	w.Header().Set("X-Per-Page", strconv.Itoa(per))
	w.Header().Set("X-Total", strconv.Itoa(len(all)))
	if hi < len(all) {
		w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
	} else {
		w.Header().Set("X-Next-Page", "")
	}
	f.json(w, 200, append([]map[string]any{}, all[lo:hi]...))
}

// reviewView is the conformance suite's view of fakeDiscussions.
type reviewView struct{ f *fakeGitLab }

func (v reviewView) Inline() map[string]string {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	out := map[string]string{}
	for _, d := range v.f.rv.list {
		out[fmt.Sprintf("%s:%d", forgetest.PatchPath, d.NewLine)] = d.Body
	}
	return out
}

func (v reviewView) Marked() []string {
	v.f.mu.Lock()
	defer v.f.mu.Unlock()
	return slices.Clone(v.f.rv.resolved)
}

func (v reviewView) ReviewRequests() int { return v.f.count("POST", `.*/discussions`) }
