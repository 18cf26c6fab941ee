package gitea

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

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

	rv *fakeReviews // review endpoints (review_fake_test.go); nil: not served
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
		comments: map[int][]*fakeComment{}, permissions: map[string]string{}, members: map[string]bool{}, pulls: map[int]map[string]any{}, files: map[int][]string{}}
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
