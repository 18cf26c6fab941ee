package gitea

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/providers/internal/sticky/stickytest"
)

// fakeGitea answers the part of Gitea's API (1.26, /api/v1) that hookrun
// calls, the way Gitea answers it: "Authorization: token <t>" or 401,
// pagination by page/limit with a Link header, 201 for creations, 204/404
// for the collaborator check, and each body decoded strictly, so that a
// field Gitea does not take fails the test.
type fakeGitea struct {
	t     *testing.T
	srv   *httptest.Server
	token string
	login string // the token's user

	reqs stickytest.Requests

	mu          sync.Mutex
	nextID      int64
	comments    map[int][]*fakeComment // by issue
	statuses    []fakeStatus
	reactions   []fakeReaction
	permissions map[string]string // login → permission; missing: 404
	members     map[string]bool   // collaborators
	pulls       map[int]map[string]any
	files       map[int][]string // pull request → its changed files (GET .../pulls/{n}/files)
	labels      []fakeLabel      // the repository's
	issues      map[int]*fakeIssue
	users       map[string]bool // logins that can be assigned

	rv *fakeReviews // review endpoints (review_fake_test.go); nil: not served
}

type fakeLabel struct {
	ID          int64
	Name, Color string
}

type fakeIssue struct {
	Labels    []int64 // label ids
	Assignees []string
	State     string
}

type fakeComment struct {
	ID    int64
	Login string
	Body  string
}

type fakeStatus struct{ SHA, State, Context, Description, TargetURL string }

type fakeReaction struct {
	Comment int64
	Content string
}

func newFakeGitea(t *testing.T) *fakeGitea {
	f := &fakeGitea{t: t, token: "gitea-token-7f3a", login: "hookrun-bot", nextID: 100,
		comments: map[int][]*fakeComment{}, permissions: map[string]string{}, members: map[string]bool{}, pulls: map[int]map[string]any{}, files: map[int][]string{},
		labels: []fakeLabel{{ID: 31, Name: "bug", Color: "ee0701"}, {ID: 32, Name: "area/queue", Color: "009800"}},
		issues: map[int]*fakeIssue{5: {State: "open"}}, users: map[string]bool{"carol": true}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// base is the server's web root, as base_url is configured.
func (f *fakeGitea) base() string { return f.srv.URL + "/" }

var (
	reComments   = regexp.MustCompile(`^/api/v1/repos/alice/demo/issues/(\d+)/comments$`)
	reComment    = regexp.MustCompile(`^/api/v1/repos/alice/demo/issues/comments/(\d+)$`)
	reReactions  = regexp.MustCompile(`^/api/v1/repos/alice/demo/issues/comments/(\d+)/reactions$`)
	reStatus     = regexp.MustCompile(`^/api/v1/repos/alice/demo/statuses/([0-9a-f]{40})$`)
	rePull       = regexp.MustCompile(`^/api/v1/repos/alice/demo/pulls/(\d+)$`)
	rePullFiles  = regexp.MustCompile(`^/api/v1/repos/alice/demo/pulls/(\d+)/files$`)
	rePermission = regexp.MustCompile(`^/api/v1/repos/alice/demo/collaborators/([^/]+)/permission$`)
	reCollab     = regexp.MustCompile(`^/api/v1/repos/alice/demo/collaborators/([^/]+)$`)
	reLabels     = regexp.MustCompile(`^/api/v1/repos/alice/demo/labels$`)
	reIssueLabel = regexp.MustCompile(`^/api/v1/repos/alice/demo/issues/(\d+)/labels(?:/(\d+))?$`)
	reIssue      = regexp.MustCompile(`^/api/v1/repos/alice/demo/issues/(\d+)$`)
)

func (f *fakeGitea) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.reqs.Add(stickytest.Request{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: string(body), At: time.Now()})
	if r.Header.Get("Authorization") != "token "+f.token {
		f.json(w, http.StatusUnauthorized, map[string]string{"message": "token is required"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := r.URL.Path
	if f.rv != nil && f.serveReview(w, r, p, body) {
		return
	}
	switch m := r.Method; {
	case m == http.MethodGet && p == "/api/v1/user":
		f.json(w, http.StatusOK, map[string]any{"id": 2, "login": f.login, "username": f.login})
	case m == http.MethodGet && reComments.MatchString(p):
		f.list(w, r, atoi(reComments.FindStringSubmatch(p)[1]))
	case m == http.MethodPost && reComments.MatchString(p):
		var in struct {
			Body string `json:"body"`
		}
		if !f.decode(w, body, &in) {
			return
		}
		n := atoi(reComments.FindStringSubmatch(p)[1])
		f.nextID++
		c := &fakeComment{ID: f.nextID, Login: f.login, Body: in.Body}
		f.comments[n] = append(f.comments[n], c)
		f.json(w, http.StatusCreated, f.commentJSON(c))
	case m == http.MethodPatch && reComment.MatchString(p):
		var in struct {
			Body string `json:"body"`
		}
		if !f.decode(w, body, &in) {
			return
		}
		c := f.find(int64(atoi(reComment.FindStringSubmatch(p)[1])))
		if c == nil {
			f.json(w, http.StatusNotFound, map[string]string{"message": "comment does not exist"})
			return
		}
		c.Body = in.Body
		f.json(w, http.StatusOK, f.commentJSON(c))
	case m == http.MethodPost && reReactions.MatchString(p):
		var in struct {
			Content string `json:"content"`
		}
		if !f.decode(w, body, &in) {
			return
		}
		f.reactions = append(f.reactions, fakeReaction{int64(atoi(reReactions.FindStringSubmatch(p)[1])), in.Content})
		f.json(w, http.StatusCreated, map[string]any{"user": map[string]any{"login": f.login}, "content": in.Content})
	case m == http.MethodPost && reStatus.MatchString(p):
		var in struct {
			State       string `json:"state"`
			TargetURL   string `json:"target_url"`
			Description string `json:"description"`
			Context     string `json:"context"`
		}
		if !f.decode(w, body, &in) {
			return
		}
		switch in.State {
		case "pending", "success", "error", "failure", "warning":
		default:
			f.json(w, http.StatusUnprocessableEntity, map[string]string{"message": "invalid state " + in.State})
			return
		}
		f.statuses = append(f.statuses, fakeStatus{reStatus.FindStringSubmatch(p)[1], in.State, in.Context, in.Description, in.TargetURL})
		f.json(w, http.StatusCreated, map[string]any{"id": len(f.statuses), "status": in.State, "context": in.Context})
	case m == http.MethodGet && rePull.MatchString(p):
		pr, ok := f.pulls[atoi(rePull.FindStringSubmatch(p)[1])]
		if !ok {
			f.json(w, http.StatusNotFound, map[string]string{"message": "pull request does not exist"})
			return
		}
		f.json(w, http.StatusOK, pr)
	case m == http.MethodGet && rePullFiles.MatchString(p):
		// One page: the suites list fewer files than a page holds.
		var out []map[string]any
		for _, name := range f.files[atoi(rePullFiles.FindStringSubmatch(p)[1])] {
			out = append(out, map[string]any{"filename": name, "status": "changed"})
		}
		f.json(w, http.StatusOK, out)
	case m == http.MethodGet && rePermission.MatchString(p):
		login := rePermission.FindStringSubmatch(p)[1]
		perm, ok := f.permissions[login]
		if !ok {
			f.json(w, http.StatusNotFound, map[string]string{"message": "user does not exist"})
			return
		}
		f.json(w, http.StatusOK, map[string]any{"permission": perm, "role_name": perm, "user": map[string]any{"login": login}})
	case m == http.MethodGet && reCollab.MatchString(p):
		if f.members[reCollab.FindStringSubmatch(p)[1]] {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusNotFound)
	case reLabels.MatchString(p), reIssueLabel.MatchString(p), reIssue.MatchString(p):
		f.issueAPI(w, r, body)
	default:
		f.t.Errorf("unexpected %s %s", r.Method, r.URL)
		f.json(w, http.StatusNotFound, map[string]string{"message": "not found"})
	}
}

// list answers one page of an issue's comments, Gitea's way: ?page and
// ?limit (default 30; GitHub's per_page is ignored), Link rel="next".
func (f *fakeGitea) list(w http.ResponseWriter, r *http.Request, issue int) {
	page, limit := 1, 30
	if v := r.URL.Query().Get("page"); v != "" {
		page = atoi(v)
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		limit = atoi(v)
	}
	all := f.comments[issue]
	from := min((page-1)*limit, len(all))
	to := min(from+limit, len(all))
	out := []any{}
	for _, c := range all[from:to] {
		out = append(out, f.commentJSON(c))
	}
	if to < len(all) {
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?page=%d&limit=%d>; rel="next"`, f.srv.URL, r.URL.Path, page+1, limit))
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(len(all)))
	f.json(w, http.StatusOK, out)
}

func (f *fakeGitea) find(id int64) *fakeComment {
	for _, cs := range f.comments {
		for _, c := range cs {
			if c.ID == id {
				return c
			}
		}
	}
	return nil
}

func (f *fakeGitea) commentJSON(c *fakeComment) map[string]any {
	return map[string]any{"id": c.ID, "body": c.Body, "user": map[string]any{"id": 2, "login": c.Login},
		"html_url": fmt.Sprintf("%salice/demo/pulls/1#issuecomment-%d", f.base(), c.ID)}
}

func (f *fakeGitea) decode(w http.ResponseWriter, body []byte, v any) bool {
	if err := stickytest.StrictJSON(body, v); err != nil {
		f.t.Errorf("request body %s: %v", body, err)
		f.json(w, http.StatusUnprocessableEntity, map[string]string{"message": err.Error()})
		return false
	}
	return true
}

func (f *fakeGitea) json(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// issueAPI answers the labels and issue endpoints the actions use, as
// Gitea does: labels added and removed by id, assignees and state through
// PATCH of the issue (201), a color "#rrggbb" for a new label.
func (f *fakeGitea) issueAPI(w http.ResponseWriter, r *http.Request, body []byte) {
	p := r.URL.Path
	labelJSON := func(l fakeLabel) map[string]any {
		return map[string]any{"id": l.ID, "name": l.Name, "color": l.Color, "description": "", "exclusive": false}
	}
	if reLabels.MatchString(p) {
		switch r.Method {
		case http.MethodGet:
			out := []any{}
			for _, l := range f.labels {
				out = append(out, labelJSON(l))
			}
			f.json(w, http.StatusOK, out)
		case http.MethodPost:
			var in struct {
				Name  string `json:"name"`
				Color string `json:"color"`
			}
			if !f.decode(w, body, &in) {
				return
			}
			if in.Name == "" || !regexp.MustCompile(`^#[0-9a-fA-F]{6}$`).MatchString(in.Color) {
				f.t.Errorf("label %s", body)
				f.json(w, http.StatusUnprocessableEntity, map[string]string{"message": "invalid label"})
				return
			}
			f.nextID++
			l := fakeLabel{ID: f.nextID, Name: in.Name, Color: in.Color[1:]}
			f.labels = append(f.labels, l)
			f.json(w, http.StatusCreated, labelJSON(l))
		default:
			f.t.Errorf("unexpected %s %s", r.Method, p)
		}
		return
	}
	var n int
	if m := reIssueLabel.FindStringSubmatch(p); m != nil {
		n = atoi(m[1])
	} else {
		n = atoi(reIssue.FindStringSubmatch(p)[1])
	}
	is := f.issues[n]
	if is == nil {
		f.json(w, http.StatusNotFound, map[string]string{"message": "issue does not exist"})
		return
	}
	issueJSON := func() map[string]any {
		as := []any{}
		for _, a := range is.Assignees {
			as = append(as, map[string]any{"id": 9, "login": a})
		}
		// As Gitea 1.26 answers: the repository's owner is a login.
		return map[string]any{"number": n, "state": is.State, "assignees": as,
			"repository": map[string]any{"id": 1, "name": "demo", "owner": "alice", "full_name": "alice/demo"}}
	}
	m := reIssueLabel.FindStringSubmatch(p)
	switch {
	case m != nil && r.Method == http.MethodPost && m[2] == "":
		var in struct {
			Labels []int64 `json:"labels"`
		}
		if !f.decode(w, body, &in) {
			return
		}
		for _, id := range in.Labels {
			if !slices.ContainsFunc(f.labels, func(l fakeLabel) bool { return l.ID == id }) {
				f.t.Errorf("label id %d does not exist", id)
				f.json(w, http.StatusUnprocessableEntity, map[string]string{"message": "label does not exist"})
				return
			}
			if !slices.Contains(is.Labels, id) {
				is.Labels = append(is.Labels, id)
			}
		}
		f.json(w, http.StatusOK, []any{})
	case m != nil && r.Method == http.MethodDelete && m[2] != "":
		k := slices.Index(is.Labels, int64(atoi(m[2])))
		if k < 0 || len(body) != 0 {
			f.json(w, http.StatusNotFound, map[string]string{"message": "label does not exist"})
			return
		}
		is.Labels = slices.Delete(is.Labels, k, k+1)
		w.WriteHeader(http.StatusNoContent)
	case m == nil && r.Method == http.MethodGet:
		f.json(w, http.StatusOK, issueJSON())
	case m == nil && r.Method == http.MethodPatch:
		var in struct {
			Assignees *[]string `json:"assignees"`
			State     *string   `json:"state"`
		}
		if !f.decode(w, body, &in) {
			return
		}
		if in.Assignees != nil {
			for _, a := range *in.Assignees {
				if !f.users[a] {
					f.json(w, http.StatusUnprocessableEntity, map[string]string{"message": "user does not exist"})
					return
				}
			}
			is.Assignees = *in.Assignees
		}
		if in.State != nil {
			if *in.State != "open" && *in.State != "closed" {
				f.t.Errorf("state %q", *in.State)
				f.json(w, http.StatusUnprocessableEntity, map[string]string{"message": "bad state"})
				return
			}
			is.State = *in.State
		}
		f.json(w, http.StatusCreated, issueJSON())
	default:
		f.t.Errorf("unexpected %s %s", r.Method, p)
		f.json(w, http.StatusNotFound, map[string]string{"message": "not found"})
	}
}

// issue is what issue (or pull request) n has (forgetest.IssueFake). Its
// Reason stays "": Gitea takes no close reason, and a body that carries
// one fails decoding.
func (f *fakeGitea) issue(n int) forgetest.IssueState {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issues[n]
	if is == nil {
		return forgetest.IssueState{}
	}
	out := forgetest.IssueState{Assignees: slices.Clone(is.Assignees), State: is.State}
	for _, id := range is.Labels {
		for _, l := range f.labels {
			if l.ID == id {
				out.Labels = append(out.Labels, l.Name)
			}
		}
	}
	for _, c := range f.comments[n] {
		if c.Login == f.login {
			out.Comments = append(out.Comments, c.Body)
		}
	}
	return out
}
