package github

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/providers/internal/sticky/stickytest"
)

// fakeGitHub is an httptest server that behaves like the parts of the GitHub
// REST API the reporter uses, under a GHES-style prefix /api/v3. It checks
// method, path, authentication and the exact JSON body of every request, and
// records every request so tests can inspect what reached "GitHub".
type fakeGitHub struct {
	t      *testing.T
	srv    *httptest.Server
	repo   string // owner/name it serves
	bot    string // login the token or app authenticates as
	token  string // token mode: the valid token ("" in App mode)
	pageSz int    // GitHub caps per_page at 100; the fake caps lower to exercise paging

	// App mode.
	appID    int64
	appKey   *rsa.PublicKey
	appSlug  string
	tokenTTL []time.Duration // lifetime of each issued installation token, in order; the last repeats
	repoInst int64           // installation GET /repos/{repo}/installation names (0: 404)

	mu        sync.Mutex
	nextID    int64
	comments  []*fakeComment
	statuses  []fakeStatus
	reactions []fakeReaction
	tokens    map[string]time.Time // issued installation token → expiry
	issued    []string
	template  map[string]any // a real comment object (from a webhook payload) used to shape answers
	pulls     map[int]fakePull
	prObject  map[string]any           // a real pull request object (from a webhook payload) used to shape answers
	files     map[int][]string         // pull request → its changed files (GET .../pulls/{n}/files)
	compares  map[string][]string      // "base...head" → the files between them (GET .../compare/{basehead})
	hookDels  map[int64][]fakeDelivery // webhook id (0: the App's) → its deliveries, newest first
	redone    []string                 // "hook/delivery" ids asked to be redelivered

	repoLabels []fakeLabel        // GET/POST /repos/{repo}/labels
	issues     map[int]*fakeIssue // issues the actions API changes
	users      map[string]bool    // logins that can be assigned

	permissions   map[string]string // login → permission on the repository (collaborators API); missing: 404
	collaborators map[string]bool   // logins that are collaborators of the repository

	reqs    stickytest.Requests
	limited stickytest.Limits // answered with a secondary rate limit

	rv *fakeReviews // review and checks endpoints (review_fake_test.go); nil: not served
}

// fakeLabel is a label of the repository.
type fakeLabel struct {
	ID          int64
	Name, Color string
}

// fakeIssue is what the actions API changes on an issue.
type fakeIssue struct {
	Labels, Assignees []string
	State, Reason     string
}

type fakeComment struct {
	ID     int64
	Issue  int
	Login  string
	Body   string
	Edits  int
	Create time.Time
}

type fakeStatus struct {
	SHA, State, Context, Description, TargetURL string
}

type fakeReaction struct {
	Comment int64
	Content string
}

// fakeDelivery is one attempt at delivering to a webhook.
type fakeDelivery struct {
	ID     int64
	GUID   string
	Event  string
	Code   int
	At     time.Time
	Redone bool
}

// fakePull is the head and base of one pull request the fake serves.
type fakePull struct {
	HeadSHA, HeadRef, BaseRef string
	HeadRepo                  string // full name; "" = a deleted fork (head.repo null)
}

func newFakeGitHub(t *testing.T) *fakeGitHub {
	t.Helper()
	raw, err := os.ReadFile("testdata/issue_comment.created.json")
	if err != nil {
		t.Fatal(err)
	}
	var payload struct {
		Comment map[string]any `json:"comment"`
	}
	if err := json.Unmarshal(raw, &payload); err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile("testdata/pull_request.opened.json")
	if err != nil {
		t.Fatal(err)
	}
	var prPayload struct {
		PullRequest map[string]any `json:"pull_request"`
	}
	if err := json.Unmarshal(raw, &prPayload); err != nil {
		t.Fatal(err)
	}
	f := &fakeGitHub{t: t, repo: "Codertocat/Hello-World", bot: "hookrun-bot", token: "ghp_testtoken123", pageSz: 3,
		nextID: 1000, tokens: map[string]time.Time{},
		template: payload.Comment, pulls: map[int]fakePull{}, prObject: prPayload.PullRequest,
		files: map[int][]string{}, compares: map[string][]string{}, hookDels: map[int64][]fakeDelivery{},
		repoLabels: []fakeLabel{{ID: 11, Name: "bug", Color: "d73a4a"}, {ID: 12, Name: "area/queue", Color: "0e8a16"}},
		issues:     map[int]*fakeIssue{5: {State: "open"}}, users: map[string]bool{"octocat": true}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// url is the API root to configure the reporter with (GHES style).
func (f *fakeGitHub) url() string { return f.srv.URL + "/api/v3/" }

// seed adds a comment written by someone (as if before the test).
func (f *fakeGitHub) seed(issue int, login, body string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.comments = append(f.comments, &fakeComment{ID: f.nextID, Issue: issue, Login: login, Body: body})
	return f.nextID
}

// limit makes the next n requests to "METHOD /path" fail with GitHub's
// secondary rate limit answer (403, Retry-After: 1).
func (f *fakeGitHub) limit(methodPath string, n int) { f.limited.Set(methodPath, n) }

func (f *fakeGitHub) comment(id int64) *fakeComment {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.comments {
		if c.ID == id {
			cp := *c
			return &cp
		}
	}
	return nil
}

func (f *fakeGitHub) commentsBy(login string) []fakeComment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeComment
	for _, c := range f.comments {
		if c.Login == login {
			out = append(out, *c)
		}
	}
	return out
}

func (f *fakeGitHub) allStatuses() []fakeStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.statuses)
}

func (f *fakeGitHub) allReactions() []fakeReaction {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reactions)
}

func (f *fakeGitHub) allRequests() []stickytest.Request { return f.reqs.All() }

// count returns how many requests matched method and a path regexp.
func (f *fakeGitHub) count(method, pathRE string) int { return f.reqs.Count(method, pathRE) }

var (
	reIssueComments  = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$`)
	reComment        = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/comments/(\d+)$`)
	reReactions      = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/comments/(\d+)/reactions$`)
	reStatuses       = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/statuses/([0-9a-f]{40})$`)
	reAccessTokens   = regexp.MustCompile(`^/app/installations/(\d+)/access_tokens$`)
	reRepoInstall    = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/installation$`)
	rePull           = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls/(\d+)$`)
	reAppDeliveries  = regexp.MustCompile(`^/app/hook/deliveries(?:/(\d+)/attempts)?$`)
	reHookDeliveries = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/hooks/(\d+)/deliveries(?:/(\d+)/attempts)?$`)
	reRepoLabels     = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/labels$`)
	reIssueLabels    = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)/labels(?:/(.+))?$`)
	reIssueAssignees = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)/assignees$`)
	reIssue          = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)$`)
	rePullFiles      = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls/(\d+)/files$`)
	reCompare        = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/compare/([0-9a-f]+\.\.\.[0-9a-f]+)$`)
	reCollaborator   = regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/collaborators/([^/]+)(/permission)?$`)
)

// secondaryLimit answers as GitHub does a request over its secondary rate
// limit, asking to wait retryAfter seconds.
func (f *fakeGitHub) secondaryLimit(w http.ResponseWriter, retryAfter string) {
	w.Header().Set("Retry-After", retryAfter)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(403)
	io.WriteString(w, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:1111:2222.","documentation_url":"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`)
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path, ok := strings.CutPrefix(r.URL.Path, "/api/v3")
	f.reqs.Add(stickytest.Request{Method: r.Method, Path: path, Auth: r.Header.Get("Authorization"), Body: string(body), At: time.Now()})
	if !ok {
		f.fail(w, 404, "Not Found", "request outside the API prefix: "+r.URL.Path)
		return
	}

	// Secondary rate limit, as GitHub answers it.
	if f.limited.Take(r.Method + " " + path) {
		f.secondaryLimit(w, "1")
		return
	}

	// App endpoints take the JWT.
	if m := reAppDeliveries.FindStringSubmatch(path); m != nil {
		if !f.checkJWT(w, r) {
			return
		}
		f.deliveries(w, r, 0, m[1])
		return
	}
	if m := reAccessTokens.FindStringSubmatch(path); m != nil || path == "/app" || reRepoInstall.MatchString(path) {
		if !f.checkJWT(w, r) {
			return
		}
		switch {
		case reRepoInstall.MatchString(path) && r.Method == "GET":
			ri := reRepoInstall.FindStringSubmatch(path)
			if owner, name, _ := strings.Cut(f.repo, "/"); ri[1] != owner || ri[2] != name || f.repoInst == 0 {
				f.fail(w, 404, "Not Found", "no installation on "+ri[1]+"/"+ri[2])
				return
			}
			f.json(w, 200, map[string]any{"id": f.repoInst, "app_id": f.appID, "target_type": "Organization",
				"account": map[string]any{"login": "Codertocat"}, "repository_selection": "selected"})
		case path == "/app" && r.Method == "GET":
			f.json(w, 200, map[string]any{"id": f.appID, "slug": f.appSlug, "name": "hookrun test", "owner": map[string]any{"login": "Codertocat"}})
		case m != nil && r.Method == "POST":
			if b := strings.TrimSpace(string(body)); b != "" && b != "{}" && b != "null" {
				f.fail(w, 422, "Invalid request.", "unexpected token options "+string(body))
				return
			}
			f.mu.Lock()
			ttl := f.tokenTTL[min(len(f.issued), len(f.tokenTTL)-1)]
			tok := fmt.Sprintf("ghs_installation%s_%d", m[1], len(f.issued)+1)
			exp := time.Now().Add(ttl).Truncate(time.Second)
			f.tokens[tok] = exp
			f.issued = append(f.issued, tok)
			f.mu.Unlock()
			f.json(w, 201, map[string]any{"token": tok, "expires_at": exp.UTC().Format(time.RFC3339),
				"permissions": map[string]string{"issues": "write", "pull_requests": "write", "statuses": "write"}, "repository_selection": "all"})
		default:
			f.fail(w, 404, "Not Found", "")
		}
		return
	}

	if !f.checkAuth(w, r) {
		return
	}
	if f.rv != nil && f.serveReview(w, r, path, body) {
		return
	}
	owner, name, _ := strings.Cut(f.repo, "/")
	repoOK := func(m []string) bool {
		if m[1] != owner || m[2] != name {
			f.fail(w, 404, "Not Found", "")
			return false
		}
		return true
	}

	switch {
	case path == "/user" && r.Method == "GET":
		f.json(w, 200, map[string]any{"login": f.bot, "id": 4242, "type": "User"})

	case reCollaborator.MatchString(path) && r.Method == "GET" && len(body) == 0:
		// GET .../collaborators/{login}/permission: the permission;
		// GET .../collaborators/{login}: 204 for a collaborator.
		m := reCollaborator.FindStringSubmatch(path)
		if !repoOK(m) {
			return
		}
		f.mu.Lock()
		p, known := f.permissions[m[3]]
		collaborator := f.collaborators[m[3]]
		f.mu.Unlock()
		switch {
		case m[4] != "" && known:
			f.json(w, 200, map[string]any{"permission": p, "role_name": p, "user": map[string]any{"login": m[3], "type": "User"}})
		case m[4] == "" && collaborator:
			w.WriteHeader(204)
		default:
			f.fail(w, 404, "Not Found", "")
		}

	case reIssueComments.MatchString(path):
		m := reIssueComments.FindStringSubmatch(path)
		if !repoOK(m) {
			return
		}
		issue, _ := strconv.Atoi(m[3])
		switch r.Method {
		case "GET":
			f.list(w, r, issue)
		case "POST":
			text, ok := f.commentBody(w, body)
			if !ok {
				return
			}
			f.mu.Lock()
			f.nextID++
			c := &fakeComment{ID: f.nextID, Issue: issue, Login: f.bot, Body: text, Create: time.Now()}
			f.comments = append(f.comments, c)
			f.mu.Unlock()
			f.json(w, 201, f.commentJSON(c))
		default:
			f.fail(w, 404, "Not Found", "")
		}

	case reComment.MatchString(path) && r.Method == "PATCH":
		m := reComment.FindStringSubmatch(path)
		if !repoOK(m) {
			return
		}
		id, _ := strconv.ParseInt(m[3], 10, 64)
		text, ok := f.commentBody(w, body)
		if !ok {
			return
		}
		f.mu.Lock()
		var c *fakeComment
		for _, x := range f.comments {
			if x.ID == id {
				c = x
			}
		}
		if c == nil {
			f.mu.Unlock()
			f.fail(w, 404, "Not Found", "")
			return
		}
		if c.Login != f.bot {
			f.mu.Unlock()
			f.fail(w, 403, "Must have admin rights to Repository.", "")
			return
		}
		c.Body = text
		c.Edits++
		out := f.commentJSON(c)
		f.mu.Unlock()
		f.json(w, 200, out)

	case reReactions.MatchString(path) && r.Method == "POST":
		m := reReactions.FindStringSubmatch(path)
		if !repoOK(m) {
			return
		}
		var in map[string]any
		if err := stickytest.StrictJSON(body, &in); err != nil || len(in) != 1 || in["content"] == nil {
			f.fail(w, 422, "Invalid request.", fmt.Sprintf("reaction body %s", body))
			return
		}
		content, _ := in["content"].(string)
		if !slices.Contains([]string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}, content) {
			f.fail(w, 422, "Validation Failed", "content "+content)
			return
		}
		id, _ := strconv.ParseInt(m[3], 10, 64)
		f.mu.Lock()
		f.reactions = append(f.reactions, fakeReaction{Comment: id, Content: content})
		f.mu.Unlock()
		f.json(w, 201, map[string]any{"id": 1, "node_id": "MDg6UmVhY3Rpb24x", "content": content, "user": map[string]any{"login": f.bot}})

	case reStatuses.MatchString(path) && r.Method == "POST":
		m := reStatuses.FindStringSubmatch(path)
		if !repoOK(m) {
			return
		}
		var in struct {
			State       *string `json:"state"`
			TargetURL   *string `json:"target_url"`
			Description *string `json:"description"`
			Context     *string `json:"context"`
		}
		if err := stickytest.StrictJSON(body, &in); err != nil || in.State == nil {
			f.fail(w, 422, "Invalid request.", fmt.Sprintf("status body %s: %v", body, err))
			return
		}
		if !slices.Contains([]string{"error", "failure", "pending", "success"}, *in.State) {
			f.fail(w, 422, "Validation Failed", "state "+*in.State)
			return
		}
		st := fakeStatus{SHA: m[3], State: *in.State}
		if in.Context != nil {
			st.Context = *in.Context
		}
		if in.Description != nil {
			st.Description = *in.Description
			if utf8.RuneCountInString(st.Description) > 140 {
				f.fail(w, 422, "Validation Failed", "description is too long (maximum is 140 characters)")
				return
			}
		}
		if in.TargetURL != nil {
			st.TargetURL = *in.TargetURL
		}
		f.mu.Lock()
		f.statuses = append(f.statuses, st)
		id := len(f.statuses)
		f.mu.Unlock()
		f.json(w, 201, map[string]any{"id": id, "state": st.State, "context": st.Context, "description": st.Description, "target_url": st.TargetURL})

	case rePull.MatchString(path) && r.Method == "GET":
		m := rePull.FindStringSubmatch(path)
		if !repoOK(m) {
			return
		}
		n, _ := strconv.Atoi(m[3])
		f.mu.Lock()
		p, ok := f.pulls[n]
		f.mu.Unlock()
		if !ok {
			f.fail(w, 404, "Not Found", "")
			return
		}
		f.json(w, 200, f.pullJSON(n, p))

	case reHookDeliveries.MatchString(path):
		m := reHookDeliveries.FindStringSubmatch(path)
		if !repoOK(m) {
			return
		}
		hook, _ := strconv.ParseInt(m[3], 10, 64)
		f.deliveries(w, r, hook, m[4])

	case rePullFiles.MatchString(path) && r.Method == "GET":
		m := rePullFiles.FindStringSubmatch(path)
		if !repoOK(m) {
			return
		}
		n, _ := strconv.Atoi(m[3])
		f.mu.Lock()
		all, ok := f.files[n]
		f.mu.Unlock()
		if !ok {
			f.fail(w, 404, "Not Found", "")
			return
		}
		f.filesPage(w, r, all[:min(len(all), 3000)]) // GitHub lists at most 3,000 files

	case reRepoLabels.MatchString(path), reIssueLabels.MatchString(path), reIssueAssignees.MatchString(path), reIssue.MatchString(path):
		f.issueAPI(w, r, path, body)

	case reCompare.MatchString(path) && r.Method == "GET":
		m := reCompare.FindStringSubmatch(path)
		if !repoOK(m) {
			return
		}
		f.mu.Lock()
		all, ok := f.compares[m[3]]
		f.mu.Unlock()
		if !ok {
			f.fail(w, 404, "Not Found", "")
			return
		}
		files := []map[string]any{}
		for _, name := range all[:min(len(all), 300)] { // the compare API lists at most 300 files
			files = append(files, fileJSON(name))
		}
		f.json(w, 200, map[string]any{"status": "ahead", "ahead_by": 1, "behind_by": 0, "total_commits": 1, "files": files,
			"commits": []any{}, "url": f.srv.URL + "/api/v3" + path})

	default:
		f.fail(w, 404, "Not Found", "no route "+r.Method+" "+path)
	}
}

// deliveries answers a webhook's deliveries list (GET, cursor pages of
// per_page, newest first, as GitHub pages them) and redelivery requests
// (POST .../{id}/attempts: 202).
func (f *fakeGitHub) deliveries(w http.ResponseWriter, r *http.Request, hook int64, attempt string) {
	f.mu.Lock()
	all, ok := f.hookDels[hook]
	f.mu.Unlock()
	if !ok {
		f.fail(w, 404, "Not Found", fmt.Sprintf("no webhook %d", hook))
		return
	}
	if attempt != "" {
		if r.Method != "POST" {
			f.fail(w, 404, "Not Found", "")
			return
		}
		id, _ := strconv.ParseInt(attempt, 10, 64)
		if !slices.ContainsFunc(all, func(d fakeDelivery) bool { return d.ID == id }) {
			f.fail(w, 404, "Not Found", "no delivery "+attempt)
			return
		}
		f.mu.Lock()
		f.redone = append(f.redone, fmt.Sprintf("%d/%d", hook, id))
		f.mu.Unlock()
		f.json(w, 202, map[string]any{})
		return
	}
	if r.Method != "GET" {
		f.fail(w, 404, "Not Found", "")
		return
	}
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 || per > 100 {
		per = 30
	}
	per = min(per, f.pageSz)
	start := 0
	if c := q.Get("cursor"); c != "" {
		start, _ = strconv.Atoi(strings.TrimPrefix(c, "v1_"))
	}
	lo, hi := min(start, len(all)), min(start+per, len(all))
	if hi < len(all) {
		next := fmt.Sprintf("%s%s?per_page=%d&cursor=v1_%d", f.srv.URL, r.URL.Path, per, hi)
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next))
	}
	out := []map[string]any{}
	for _, d := range all[lo:hi] {
		status := "OK"
		if d.Code < 200 || d.Code > 299 {
			status = "Invalid HTTP Response: " + strconv.Itoa(d.Code)
		}
		out = append(out, map[string]any{"id": d.ID, "guid": d.GUID, "delivered_at": d.At.UTC().Format(time.RFC3339), "redelivery": d.Redone,
			"duration": 0.27, "status": status, "status_code": d.Code, "event": d.Event, "action": "opened",
			"installation_id": nil, "repository_id": 1296269, "throttled_at": nil})
	}
	f.json(w, 200, out)
}

// fileJSON is one entry of a files list, as GitHub shapes it; "old => new"
// is a rename.
func fileJSON(name string) map[string]any {
	if old, renamed, ok := strings.Cut(name, " => "); ok {
		return map[string]any{"sha": "bbcd538c8e72b8c175046e27cc8f907076331401", "filename": renamed, "previous_filename": old,
			"status": "renamed", "additions": 0, "deletions": 0, "changes": 0}
	}
	return map[string]any{"sha": "bbcd538c8e72b8c175046e27cc8f907076331401", "filename": name, "status": "modified",
		"additions": 1, "deletions": 1, "changes": 2, "patch": "@@ -1 +1 @@\n-a\n+b"}
}

// filesPage answers a files list with GitHub's paging: per_page up to 100
// (default 30), a Link header while more follow.
func (f *fakeGitHub) filesPage(w http.ResponseWriter, r *http.Request, all []string) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	if hi < len(all) {
		next := fmt.Sprintf("%s%s?page=%d&per_page=%d", f.srv.URL, r.URL.Path, page+1, per)
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next))
	}
	out := []map[string]any{}
	for _, name := range all[lo:hi] {
		out = append(out, fileJSON(name))
	}
	f.json(w, 200, out)
}

// pullJSON shapes a pull request answer like GitHub's: the real object from
// the fixture with number, head and base replaced.
func (f *fakeGitHub) pullJSON(n int, p fakePull) map[string]any {
	clone := func(v any) map[string]any {
		b, _ := json.Marshal(v)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return out
	}
	out := clone(f.prObject)
	out["number"] = n
	out["url"] = fmt.Sprintf("%s/api/v3/repos/%s/pulls/%d", f.srv.URL, f.repo, n)
	head, base := out["head"].(map[string]any), out["base"].(map[string]any)
	head["sha"], head["ref"], base["ref"] = p.HeadSHA, p.HeadRef, p.BaseRef
	base["repo"].(map[string]any)["full_name"] = f.repo
	if p.HeadRepo == "" {
		head["repo"] = nil
	} else {
		head["repo"].(map[string]any)["full_name"] = p.HeadRepo
		head["label"] = strings.Split(p.HeadRepo, "/")[0] + ":" + p.HeadRef
	}
	return out
}

// list answers GET .../issues/{n}/comments with GitHub's paging (Link header).
func (f *fakeGitHub) list(w http.ResponseWriter, r *http.Request, issue int) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 || per > 100 {
		per = 30
	}
	per = min(per, f.pageSz)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	f.mu.Lock()
	var all []map[string]any
	for _, c := range f.comments {
		if c.Issue == issue {
			all = append(all, f.commentJSON(c))
		}
	}
	f.mu.Unlock()
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	if hi < len(all) {
		next := fmt.Sprintf("%s%s?page=%d&per_page=%d", f.srv.URL, r.URL.Path, page+1, per)
		last := fmt.Sprintf("%s%s?page=%d&per_page=%d", f.srv.URL, r.URL.Path, (len(all)+per-1)/per, per)
		w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next", <%s>; rel="last"`, next, last))
	}
	f.json(w, 200, append([]map[string]any{}, all[lo:hi]...))
}

// commentBody checks a create/edit body: exactly {"body": "..."}, non-empty,
// at most 65,536 characters (GitHub answers 422 beyond).
func (f *fakeGitHub) commentBody(w http.ResponseWriter, body []byte) (string, bool) {
	var in map[string]*string
	if err := stickytest.StrictJSON(body, &in); err != nil || len(in) != 1 || in["body"] == nil || *in["body"] == "" {
		f.fail(w, 422, "Invalid request.", fmt.Sprintf("comment body %.200s", body))
		return "", false
	}
	if utf8.RuneCountInString(*in["body"]) > 65536 {
		f.fail(w, 422, "Validation Failed", "Body is too long (maximum is 65536 characters)")
		return "", false
	}
	return *in["body"], true
}

func (f *fakeGitHub) commentJSON(c *fakeComment) map[string]any {
	out := map[string]any{}
	for k, v := range f.template {
		out[k] = v
	}
	owner, name, _ := strings.Cut(f.repo, "/")
	out["id"] = c.ID
	out["body"] = c.Body
	out["url"] = fmt.Sprintf("%s/api/v3/repos/%s/%s/issues/comments/%d", f.srv.URL, owner, name, c.ID)
	out["html_url"] = fmt.Sprintf("https://github.example/%s/%s/issues/%d#issuecomment-%d", owner, name, c.Issue, c.ID)
	user := map[string]any{}
	for k, v := range f.template["user"].(map[string]any) {
		user[k] = v
	}
	user["login"] = c.Login
	if strings.HasSuffix(c.Login, "[bot]") {
		user["type"] = "Bot"
	}
	out["user"] = user
	return out
}

func (f *fakeGitHub) checkAuth(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	if f.token != "" {
		if auth != "Bearer "+f.token && auth != "token "+f.token {
			f.fail(w, 401, "Bad credentials", "")
			return false
		}
		return true
	}
	tok, ok := strings.CutPrefix(auth, "token ")
	f.mu.Lock()
	exp, known := f.tokens[tok]
	f.mu.Unlock()
	if !ok || !known || time.Now().After(exp) {
		f.fail(w, 401, "Bad credentials", "")
		return false
	}
	return true
}

// checkJWT verifies the App JWT as GitHub does: RS256 signed by the app's
// key, iss = app id, issued in the past, expiring within 10 minutes.
func (f *fakeGitHub) checkJWT(w http.ResponseWriter, r *http.Request) bool {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || f.appKey == nil {
		f.fail(w, 401, "A JSON web token could not be decoded", "")
		return false
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return f.appKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if err != nil || !tok.Valid {
		f.fail(w, 401, "A JSON web token could not be decoded", fmt.Sprint(err))
		return false
	}
	iss, _ := claims.GetIssuer()
	iat, _ := claims.GetIssuedAt()
	exp, _ := claims.GetExpirationTime()
	if iss != strconv.FormatInt(f.appID, 10) || iat == nil || exp.Sub(iat.Time) > 10*time.Minute {
		f.fail(w, 401, "'Issuer' claim ('iss') must be an Integer", "")
		return false
	}
	return true
}

func (f *fakeGitHub) json(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Ratelimit-Limit", "5000")
	w.Header().Set("X-Ratelimit-Remaining", "4990")
	w.Header().Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// fail answers like GitHub does; why is logged for the test's reader.
func (f *fakeGitHub) fail(w http.ResponseWriter, code int, msg, why string) {
	if why != "" {
		f.t.Logf("fake github: %d %s: %s", code, msg, why)
	}
	f.json(w, code, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

// issueAPI answers the labels, assignees and issue-edit endpoints the
// actions use, checking the exact body of each.
func (f *fakeGitHub) issueAPI(w http.ResponseWriter, r *http.Request, path string, body []byte) {
	owner, name, _ := strings.Cut(f.repo, "/")
	var m []string
	for _, re := range []*regexp.Regexp{reRepoLabels, reIssueLabels, reIssueAssignees, reIssue} {
		if m = re.FindStringSubmatch(path); m != nil {
			break
		}
	}
	if m[1] != owner || m[2] != name {
		f.fail(w, 404, "Not Found", "")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	labelJSON := func(l fakeLabel) map[string]any {
		return map[string]any{"id": l.ID, "name": l.Name, "color": l.Color, "default": false, "description": nil}
	}
	if reRepoLabels.MatchString(path) {
		switch r.Method {
		case "GET":
			out := []map[string]any{}
			for _, l := range f.repoLabels {
				out = append(out, labelJSON(l))
			}
			f.json(w, 200, out)
		case "POST":
			var in struct{ Name, Color string }
			if err := stickytest.StrictJSON(body, &in); err != nil || in.Name == "" || !regexp.MustCompile(`^[0-9a-f]{6}$`).MatchString(in.Color) {
				f.fail(w, 422, "Validation Failed", fmt.Sprintf("label %s: %v", body, err))
				return
			}
			f.nextID++
			l := fakeLabel{ID: f.nextID, Name: in.Name, Color: in.Color}
			f.repoLabels = append(f.repoLabels, l)
			f.json(w, 201, labelJSON(l))
		default:
			f.fail(w, 404, "Not Found", "")
		}
		return
	}
	n, _ := strconv.Atoi(m[3])
	is := f.issues[n]
	if is == nil {
		f.fail(w, 404, "Not Found", fmt.Sprintf("no issue %d", n))
		return
	}
	hasLabel := func(l string) bool {
		return slices.ContainsFunc(f.repoLabels, func(x fakeLabel) bool { return x.Name == l })
	}
	switch {
	case reIssueLabels.MatchString(path) && r.Method == "POST" && m[4] == "":
		var in struct{ Labels []string }
		if err := stickytest.StrictJSON(body, &in); err != nil || len(in.Labels) == 0 {
			f.fail(w, 422, "Invalid request.", fmt.Sprintf("labels %s: %v", body, err))
			return
		}
		for _, l := range in.Labels {
			if !hasLabel(l) {
				// GitHub would create it: the fake refuses, so a test sees
				// hookrun never relies on that.
				f.fail(w, 422, "Validation Failed", "label "+l+" does not exist")
				return
			}
			if !slices.Contains(is.Labels, l) {
				is.Labels = append(is.Labels, l)
			}
		}
		f.json(w, 200, []any{})
	case reIssueLabels.MatchString(path) && r.Method == "DELETE" && m[4] != "":
		l, err := url.PathUnescape(m[4])
		k := slices.Index(is.Labels, l)
		if err != nil || len(body) != 0 || k < 0 {
			f.fail(w, 404, "Label does not exist", "")
			return
		}
		is.Labels = slices.Delete(is.Labels, k, k+1)
		f.json(w, 200, []any{})
	case reIssueAssignees.MatchString(path) && (r.Method == "POST" || r.Method == "DELETE"):
		var in struct{ Assignees []string }
		if err := stickytest.StrictJSON(body, &in); err != nil || len(in.Assignees) == 0 {
			f.fail(w, 422, "Invalid request.", fmt.Sprintf("assignees %s: %v", body, err))
			return
		}
		for _, a := range in.Assignees {
			k := slices.Index(is.Assignees, a)
			switch {
			case r.Method == "POST" && k < 0 && f.users[a]:
				is.Assignees = append(is.Assignees, a)
			case r.Method == "DELETE" && k >= 0:
				is.Assignees = slices.Delete(is.Assignees, k, k+1)
			}
		}
		f.json(w, 201, map[string]any{"number": n})
	case reIssue.MatchString(path) && r.Method == "PATCH":
		var in struct {
			State       string `json:"state"`
			StateReason string `json:"state_reason"`
		}
		err := stickytest.StrictJSON(body, &in)
		okReason := map[string][]string{"closed": {"", "completed", "not_planned"}, "open": {"", "reopened"}}[in.State]
		if err != nil || okReason == nil || !slices.Contains(okReason, in.StateReason) {
			f.fail(w, 422, "Validation Failed", fmt.Sprintf("issue edit %s: %v", body, err))
			return
		}
		is.State, is.Reason = in.State, in.StateReason
		f.json(w, 200, map[string]any{"number": n, "state": in.State})
	default:
		f.fail(w, 404, "Not Found", "no route "+r.Method+" "+path)
	}
}

// issue is what issue (or pull request) n has (forgetest.IssueFake).
func (f *fakeGitHub) issue(n int) forgetest.IssueState {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issues[n]
	if is == nil {
		return forgetest.IssueState{}
	}
	out := forgetest.IssueState{Labels: slices.Clone(is.Labels), Assignees: slices.Clone(is.Assignees), State: is.State, Reason: is.Reason}
	for _, c := range f.comments {
		if c.Issue == n && c.Login == f.bot {
			out.Comments = append(out.Comments, c.Body)
		}
	}
	return out
}
