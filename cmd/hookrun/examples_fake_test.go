package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// examplesGitHub is the part of GitHub the runs of examples/ touch, for
// any number of repositories: the run's sticky comment and the issues API
// hookrun acts through (repository labels, an issue's labels, comments and
// state), each only with hookrun's token; the listing of a repository's
// open issues (GET /repos/{repo}/issues, as stale-sweep's step calls it),
// only with the read-only token; and git smart HTTP for a checkout. It
// decodes every body strictly (unknown fields, a second value and missing
// required fields are refused as the real API refuses them) and records
// every API request.
type examplesGitHub struct {
	t         *testing.T
	token     string       // hookrun's
	readToken string       // the read-only token a step holds
	git       http.Handler // nil: no git
	pageSize  int          // GitHub caps per_page at 100; the fake lower, to make the step page

	mu       sync.Mutex
	nextID   int64
	repos    map[string]*exRepo
	comments map[int64]*exComment
	calls    []exCall
	bad      []string
}

type exRepo struct {
	labels []string
	issues map[int]*exIssue
}

// exIssue is an issue (or pull request, PR) of a repository.
type exIssue struct {
	title         string
	labels        []string
	state, reason string
	updated       time.Time
	pr            bool
}

type exComment struct {
	repo  string
	issue int
	body  string
}

// exCall is one API request: the token it carried ("hookrun", "read" or
// what else) and its body as sent.
type exCall struct {
	Method, Path, Query, Token, Body string
}

func newExamplesGitHub(t *testing.T, token, readToken string) *examplesGitHub {
	return &examplesGitHub{t: t, token: token, readToken: readToken, pageSize: 2, nextID: 500,
		repos: map[string]*exRepo{}, comments: map[int64]*exComment{}}
}

// repo adds repository name with labels.
func (f *examplesGitHub) repo(name string, labels ...string) *exRepo {
	r := &exRepo{labels: labels, issues: map[int]*exIssue{}}
	f.repos[name] = r
	return r
}

var (
	reExRepo         = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/(.+)$`)
	reExIssue        = regexp.MustCompile(`^issues/(\d+)$`)
	reExIssueLabels  = regexp.MustCompile(`^issues/(\d+)/labels$`)
	reExIssueComment = regexp.MustCompile(`^issues/(\d+)/comments$`)
	reExEditComment  = regexp.MustCompile(`^issues/comments/(\d+)$`)
	reExReaction     = regexp.MustCompile(`^issues/comments/(\d+)/reactions$`)
)

func (f *examplesGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.git != nil && strings.Contains(r.URL.Path, ".git/") {
		if user, pass, ok := r.BasicAuth(); !ok || user != "x-access-token" || pass != f.token {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
			return
		}
		f.git.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	token := "other"
	switch r.Header.Get("Authorization") {
	case "Bearer " + f.token, "token " + f.token:
		token = "hookrun"
	case "Bearer " + f.readToken:
		token = "read"
	}
	f.calls = append(f.calls, exCall{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Token: token, Body: string(body)})
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet && r.URL.Path == "/user" && token == "hookrun" {
		f.reply(w, 200, map[string]any{"login": "hookrun-bot", "id": 1})
		return
	}
	m := reExRepo.FindStringSubmatch(r.URL.Path)
	if m == nil || f.repos[m[1]] == nil {
		f.fail(w, r, 404, "no such route")
		return
	}
	if m[2] == "issues" && r.Method == http.MethodGet {
		// The step's listing: with the read-only token only.
		if token != "read" {
			f.fail(w, r, 401, "listing issues without the read-only token")
			return
		}
		f.listIssues(w, r, f.repos[m[1]])
		return
	}
	if token != "hookrun" {
		// A read-only token cannot change anything (403), no token at all
		// is a 401: either way the request was not hookrun's.
		f.fail(w, r, 403, "a change without hookrun's token ("+token+")")
		return
	}
	f.issuesAPI(w, r, m[1], m[2], body)
}

// issuesAPI serves hookrun's requests below /repos/{repo}/.
func (f *examplesGitHub) issuesAPI(w http.ResponseWriter, r *http.Request, repo, rest string, body []byte) {
	rp := f.repos[repo]
	switch {
	case rest == "labels" && r.Method == http.MethodGet:
		out := []map[string]any{}
		for i, l := range rp.labels {
			out = append(out, map[string]any{"id": i + 1, "name": l, "color": "ededed", "default": false, "description": nil})
		}
		f.reply(w, 200, out)
	case reExIssueLabels.MatchString(rest) && r.Method == http.MethodPost:
		is := f.issue(w, r, rp, reExIssueLabels.FindStringSubmatch(rest)[1])
		var in struct {
			Labels []string `json:"labels"`
		}
		if is == nil || !f.strict(w, r, body, &in) {
			return
		}
		for _, l := range in.Labels {
			if !slices.Contains(rp.labels, l) {
				f.fail(w, r, 422, "label "+l+" does not exist") // GitHub would create it: hookrun must not rely on that
				return
			}
			if !slices.Contains(is.labels, l) {
				is.labels = append(is.labels, l)
			}
		}
		f.reply(w, 200, []any{})
	case reExIssue.MatchString(rest) && r.Method == http.MethodPatch:
		f.editIssue(w, r, f.issue(w, r, rp, reExIssue.FindStringSubmatch(rest)[1]), body)
	case reExIssueComment.MatchString(rest):
		n, _ := strconv.Atoi(reExIssueComment.FindStringSubmatch(rest)[1])
		f.issueComments(w, r, repo, n, body)
	case reExEditComment.MatchString(rest) && r.Method == http.MethodPatch:
		id, _ := strconv.ParseInt(reExEditComment.FindStringSubmatch(rest)[1], 10, 64)
		c := f.comments[id]
		var in struct {
			Body string `json:"body"`
		}
		if c == nil || c.repo != repo {
			f.fail(w, r, 404, "edit of an unknown comment")
			return
		}
		if f.strict(w, r, body, &in) {
			c.body = in.Body
			f.reply(w, 200, f.commentJSON(id, c))
		}
	case reExReaction.MatchString(rest) && r.Method == http.MethodPost:
		// hookrun acknowledges a command comment with a reaction.
		var in struct {
			Content string `json:"content"`
		}
		if f.strict(w, r, body, &in) {
			if !slices.Contains([]string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}, in.Content) {
				f.fail(w, r, 422, "reaction "+in.Content)
				return
			}
			f.reply(w, 201, map[string]any{"id": 1, "content": in.Content})
		}
	default:
		f.fail(w, r, 404, "no such route")
	}
}

// issue is issue n of rp, or nil after a 404.
func (f *examplesGitHub) issue(w http.ResponseWriter, r *http.Request, rp *exRepo, n string) *exIssue {
	k, _ := strconv.Atoi(n)
	if is := rp.issues[k]; is != nil {
		return is
	}
	f.fail(w, r, 404, "no issue "+n)
	return nil
}

// editIssue is PATCH /repos/{repo}/issues/{n}: state and state_reason.
func (f *examplesGitHub) editIssue(w http.ResponseWriter, r *http.Request, is *exIssue, body []byte) {
	var in struct {
		State       string `json:"state"`
		StateReason string `json:"state_reason"`
	}
	if is == nil || !f.strict(w, r, body, &in) {
		return
	}
	ok := map[string][]string{"closed": {"completed", "not_planned"}, "open": {"reopened"}}[in.State]
	if !slices.Contains(ok, in.StateReason) {
		f.fail(w, r, 422, "state "+in.State+" with state_reason "+in.StateReason)
		return
	}
	is.state, is.reason = in.State, in.StateReason
	f.reply(w, 200, map[string]any{"state": is.state, "state_reason": is.reason})
}

// issueComments lists (GET) or creates (POST) the comments of issue n.
func (f *examplesGitHub) issueComments(w http.ResponseWriter, r *http.Request, repo string, n int, body []byte) {
	if f.repos[repo].issues[n] == nil {
		f.fail(w, r, 404, fmt.Sprintf("no issue %d", n))
		return
	}
	switch r.Method {
	case http.MethodGet:
		var ids []int64
		for id, c := range f.comments {
			if c.repo == repo && c.issue == n {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		list := []map[string]any{}
		for _, id := range ids {
			list = append(list, f.commentJSON(id, f.comments[id]))
		}
		f.reply(w, 200, list)
	case http.MethodPost:
		var in struct {
			Body string `json:"body"`
		}
		if !f.strict(w, r, body, &in) {
			return
		}
		f.nextID++
		f.comments[f.nextID] = &exComment{repo: repo, issue: n, body: in.Body}
		f.reply(w, 201, f.commentJSON(f.nextID, f.comments[f.nextID]))
	default:
		f.fail(w, r, 404, "no such route")
	}
}

func (f *examplesGitHub) commentJSON(id int64, c *exComment) map[string]any {
	return map[string]any{"id": id, "body": c.body, "user": map[string]any{"login": "hookrun-bot", "id": 1}}
}

// listIssues answers GET /repos/{repo}/issues as stale-sweep asks it: the
// open issues and pull requests, least recently updated first, one page.
func (f *examplesGitHub) listIssues(w http.ResponseWriter, r *http.Request, rp *exRepo) {
	q := r.URL.Query()
	page, err := strconv.Atoi(q.Get("page"))
	want := url.Values{"state": {"open"}, "sort": {"updated"}, "direction": {"asc"}, "per_page": {"100"}, "page": {q.Get("page")}}
	if err != nil || page < 1 || q.Encode() != want.Encode() {
		f.fail(w, r, 422, "unexpected query "+r.URL.RawQuery)
		return
	}
	var open []int
	for n, is := range rp.issues {
		if is.state == "open" {
			open = append(open, n)
		}
	}
	sort.Slice(open, func(a, b int) bool { return rp.issues[open[a]].updated.Before(rp.issues[open[b]].updated) })
	out := []map[string]any{}
	for k := (page - 1) * f.pageSize; k < len(open) && k < page*f.pageSize; k++ {
		is := rp.issues[open[k]]
		labels := []map[string]any{}
		for _, l := range is.labels {
			labels = append(labels, map[string]any{"name": l})
		}
		item := map[string]any{"number": open[k], "title": is.title, "state": is.state, "labels": labels,
			"updated_at": is.updated.UTC().Format(time.RFC3339)}
		if is.pr {
			item["pull_request"] = map[string]any{"url": fmt.Sprintf("https://api.github.com/repos/x/y/pulls/%d", open[k])}
		}
		out = append(out, item)
	}
	f.reply(w, 200, out)
}

// strict decodes exactly one JSON value from body into v, refusing unknown
// fields and empty required strings; false after answering 422.
func (f *examplesGitHub) strict(w http.ResponseWriter, r *http.Request, body []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("a second value")
	}
	if err == nil && bytes.Contains(body, []byte(`:""`)) {
		err = errors.New("an empty string")
	}
	if err != nil {
		f.fail(w, r, 422, fmt.Sprintf("body %s: %v", body, err))
		return false
	}
	return true
}

func (f *examplesGitHub) reply(w http.ResponseWriter, code int, v any) {
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *examplesGitHub) fail(w http.ResponseWriter, r *http.Request, code int, why string) {
	f.bad = append(f.bad, r.Method+" "+r.URL.Path+": "+why)
	w.WriteHeader(code)
	_, _ = io.WriteString(w, `{"message":"Validation Failed"}`)
}

// changes are the requests that changed issue path (not GET; path and
// below), but for the run's own sticky comment: created with skip in its
// body, then edited.
func (f *examplesGitHub) changes(path, skip string) []exCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []exCall
	for _, c := range f.calls {
		if c.Method == http.MethodGet || c.Path != path && !strings.HasPrefix(c.Path, path+"/") || strings.Contains(c.Body, skip) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// state is what issue n of repo has now.
func (f *examplesGitHub) state(repo string, n int) (labels []string, state, reason string, comments []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.repos[repo].issues[n]
	var ids []int64
	for id, c := range f.comments {
		if c.repo == repo && c.issue == n {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		comments = append(comments, f.comments[id].body)
	}
	return slices.Clone(is.labels), is.state, is.reason, comments
}

// problems are the requests the real API would have refused.
func (f *examplesGitHub) problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bad)
}

// callsBy are the calls that carried token ("hookrun", "read"), as
// "METHOD path?query".
func (f *examplesGitHub) callsBy(token string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if c.Token == token {
			out = append(out, c.Method+" "+c.Path+"?"+c.Query)
		}
	}
	return out
}
