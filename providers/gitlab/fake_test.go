package gitlab

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hookrun/hookrun/providers/forge/forgetest"
	"github.com/hookrun/hookrun/providers/internal/sticky/stickytest"
)

// fakeGitLab is an httptest server that behaves like the parts of the GitLab
// REST API v4 the reporter uses. It checks method, the URL-encoded project
// path, the PRIVATE-TOKEN header and the exact JSON body of every request,
// and records every request so tests can inspect what reached "GitLab".
type fakeGitLab struct {
	t       *testing.T
	srv     *httptest.Server
	project string // path it serves
	projID  int64  // its numeric id (also accepted in paths)
	token   string
	botID   int64
	bot     string
	pageSz  int

	mu       sync.Mutex
	nextID   int64
	notes    []*fakeNote
	statuses []fakeStatus
	current  map[string]string // sha + name → state (GitLab refuses same-state transitions)
	members  map[int64]fakeMember
	mrs      map[int64]fakeMR
	diffs    map[int64][]string  // merge request → its changed files ("old => new": a rename)
	compares map[string][]string // "from...to" → the files between them
	labels   []string            // the project's labels
	issues   map[int64]*fakeIssue
	mrState  map[int64]*fakeIssue // what the actions change on a merge request (its labels, assignees, state)
	users    map[string]int64     // username → id

	reqs    stickytest.Requests
	limited stickytest.Limits // answered 429

	rv *fakeDiscussions // review endpoints (review_fake_test.go); nil: not served
}

type fakeNote struct {
	ID       int64
	MR       bool
	IID      int64
	AuthorID int64
	Username string
	Body     string
	System   bool
	Edits    int
}

// fakeIssue is what the actions change on an issue.
type fakeIssue struct {
	Labels    []string
	Assignees []int64
	State     string // opened | closed
}

type fakeStatus struct {
	SHA, State, Name, Description, TargetURL string
}

// fakeMember is a user's membership of the project (direct or inherited).
type fakeMember struct {
	Username    string
	AccessLevel int
	State       string // "active" unless set
	ExpiresAt   string // YYYY-MM-DD, "" = never
}

// fakeMR is the head of one merge request.
type fakeMR struct {
	SHA, Source, Target string
	SourceProject       int64 // 0 = the project itself
}

func newFakeGitLab(t *testing.T) *fakeGitLab {
	f := &fakeGitLab{t: t, project: "gitlab-org/gitlab-test", projID: 5, token: "glpat-testtoken-abc123", botID: 9001, bot: "hookrun-bot",
		pageSz: 3, nextID: 2000, current: map[string]string{}, members: map[int64]fakeMember{}, mrs: map[int64]fakeMR{},
		diffs: map[int64][]string{}, compares: map[string][]string{},
		labels: []string{"bug", "area/queue"}, issues: map[int64]*fakeIssue{5: {State: "opened"}}, mrState: map[int64]*fakeIssue{}, users: map[string]int64{"dave": 77}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitLab) seed(mr bool, iid, author int64, username, body string, system bool) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.notes = append(f.notes, &fakeNote{ID: f.nextID, MR: mr, IID: iid, AuthorID: author, Username: username, Body: body, System: system})
	return f.nextID
}

func (f *fakeGitLab) limit(methodPath string, n int) { f.limited.Set(methodPath, n) }

func (f *fakeGitLab) note(id int64) *fakeNote {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.notes {
		if n.ID == id {
			cp := *n
			return &cp
		}
	}
	return nil
}

func (f *fakeGitLab) notesBy(author int64) []fakeNote {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeNote
	for _, n := range f.notes {
		if n.AuthorID == author {
			out = append(out, *n)
		}
	}
	return out
}

func (f *fakeGitLab) allStatuses() []fakeStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.statuses)
}

func (f *fakeGitLab) allRequests() []stickytest.Request { return f.reqs.All() }

func (f *fakeGitLab) count(method, pathRE string) int { return f.reqs.Count(method, pathRE) }

var (
	reNotes    = regexp.MustCompile(`^/projects/([^/]+)/(merge_requests|issues)/(\d+)/notes$`)
	reNote     = regexp.MustCompile(`^/projects/([^/]+)/(merge_requests|issues)/(\d+)/notes/(\d+)$`)
	reStatuses = regexp.MustCompile(`^/projects/([^/]+)/statuses/([0-9a-f]{40})$`)
	reMember   = regexp.MustCompile(`^/projects/([^/]+)/members/all/(\d+)$`)
	reMR       = regexp.MustCompile(`^/projects/([^/]+)/merge_requests/(\d+)$`)
	reMRDiffs  = regexp.MustCompile(`^/projects/([^/]+)/merge_requests/(\d+)/diffs$`)
	reCompare  = regexp.MustCompile(`^/projects/([^/]+)/repository/compare$`)
	reLabels   = regexp.MustCompile(`^/projects/([^/]+)/labels$`)
	reIssue    = regexp.MustCompile(`^/projects/([^/]+)/issues/(\d+)$`)
)

func (f *fakeGitLab) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/v4")
	f.reqs.Add(stickytest.Request{Method: r.Method, Path: path, Auth: r.Header.Get("PRIVATE-TOKEN"), Body: string(body), At: time.Now()})
	limited := f.limited.Take(r.Method + " " + path)
	if !ok {
		f.fail(w, 404, "404 Not Found", "outside /api/v4: "+r.URL.Path)
		return
	}
	if r.Header.Get("PRIVATE-TOKEN") != f.token {
		f.fail(w, 401, "401 Unauthorized", "")
		return
	}
	if limited {
		// GitLab's rate limiter answer (Rack::Attack).
		w.Header().Set("Retry-After", "1")
		w.Header().Set("RateLimit-Limit", "600")
		w.Header().Set("RateLimit-Observed", "601")
		w.Header().Set("RateLimit-Remaining", "0")
		w.Header().Set("RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10))
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(429)
		io.WriteString(w, "Retry later\n")
		return
	}
	enc := strings.ReplaceAll(f.project, "/", "%2F")
	projectOK := func(p string) bool {
		if p != enc && p != strconv.FormatInt(f.projID, 10) {
			f.fail(w, 404, "404 Project Not Found", "project "+p)
			return false
		}
		return true
	}

	if f.rv != nil && f.serveReview(w, r, path, body) {
		return
	}
	switch {
	case path == "/user" && r.Method == "GET":
		f.json(w, 200, map[string]any{"id": f.botID, "username": f.bot, "name": "hookrun", "state": "active", "bot": true})

	case path == "/users" && r.Method == "GET":
		login := r.URL.Query().Get("username")
		f.mu.Lock()
		id, ok := f.users[login]
		f.mu.Unlock()
		out := []map[string]any{}
		if ok {
			out = append(out, map[string]any{"id": id, "username": login, "name": login, "state": "active"})
		}
		f.json(w, 200, out)

	case reLabels.MatchString(path):
		if !projectOK(reLabels.FindStringSubmatch(path)[1]) {
			return
		}
		f.labelsAPI(w, r, body)

	case reIssue.MatchString(path), reMR.MatchString(path) && r.Method == "PUT":
		m, mr := reIssue.FindStringSubmatch(path), false
		if m == nil {
			m, mr = reMR.FindStringSubmatch(path), true
		}
		if !projectOK(m[1]) {
			return
		}
		iid, _ := strconv.ParseInt(m[2], 10, 64)
		f.issueAPI(w, r, mr, iid, body)

	case reNotes.MatchString(path):
		m := reNotes.FindStringSubmatch(path)
		if !projectOK(m[1]) {
			return
		}
		mr := m[2] == "merge_requests"
		iid, _ := strconv.ParseInt(m[3], 10, 64)
		switch r.Method {
		case "GET":
			f.list(w, r, mr, iid)
		case "POST":
			text, ok := f.noteBody(w, body)
			if !ok {
				return
			}
			f.mu.Lock()
			f.nextID++
			nt := &fakeNote{ID: f.nextID, MR: mr, IID: iid, AuthorID: f.botID, Username: f.bot, Body: text}
			f.notes = append(f.notes, nt)
			out := f.noteJSON(nt)
			f.mu.Unlock()
			f.json(w, 201, out)
		default:
			f.fail(w, 405, "405 Method Not Allowed", "")
		}

	case reNote.MatchString(path) && r.Method == "PUT":
		m := reNote.FindStringSubmatch(path)
		if !projectOK(m[1]) {
			return
		}
		mr := m[2] == "merge_requests"
		iid, _ := strconv.ParseInt(m[3], 10, 64)
		id, _ := strconv.ParseInt(m[4], 10, 64)
		text, ok := f.noteBody(w, body)
		if !ok {
			return
		}
		f.mu.Lock()
		var nt *fakeNote
		for _, x := range f.notes {
			if x.ID == id && x.MR == mr && x.IID == iid {
				nt = x
			}
		}
		if nt == nil {
			f.mu.Unlock()
			f.fail(w, 404, "404 Not found", "")
			return
		}
		if nt.AuthorID != f.botID {
			f.mu.Unlock()
			f.fail(w, 403, "403 Forbidden", "editing someone else's note")
			return
		}
		nt.Body = text
		nt.Edits++
		out := f.noteJSON(nt)
		f.mu.Unlock()
		f.json(w, 200, out)

	case reStatuses.MatchString(path) && r.Method == "POST":
		m := reStatuses.FindStringSubmatch(path)
		if !projectOK(m[1]) {
			return
		}
		var in struct {
			State       *string `json:"state"`
			Name        *string `json:"name"`
			TargetURL   *string `json:"target_url"`
			Description *string `json:"description"`
		}
		if err := stickytest.StrictJSON(body, &in); err != nil || in.State == nil {
			f.fail(w, 400, "400 Bad request - state is missing", fmt.Sprintf("%s: %v", body, err))
			return
		}
		if !slices.Contains([]string{"pending", "running", "success", "failed", "canceled", "skipped"}, *in.State) {
			f.fail(w, 400, "400 Bad request - state does not have a valid value", *in.State)
			return
		}
		st := fakeStatus{SHA: m[2], State: *in.State, Name: "default"}
		if in.Name != nil {
			st.Name = *in.Name
		}
		if in.Description != nil {
			st.Description = *in.Description
		}
		if in.TargetURL != nil {
			st.TargetURL = *in.TargetURL
		}
		f.mu.Lock()
		cur := f.current[st.SHA+st.Name]
		if cur == st.State {
			f.mu.Unlock()
			f.fail(w, 400, fmt.Sprintf("Cannot transition status via :enqueue from :%s (Reason(s): Status cannot transition via \"enqueue\")", cur), "")
			return
		}
		f.current[st.SHA+st.Name] = st.State
		f.statuses = append(f.statuses, st)
		id := len(f.statuses)
		f.mu.Unlock()
		f.json(w, 201, map[string]any{"id": id, "sha": st.SHA, "status": st.State, "name": st.Name,
			"description": st.Description, "target_url": st.TargetURL, "allow_failure": false})

	case reMember.MatchString(path) && r.Method == "GET":
		m := reMember.FindStringSubmatch(path)
		if !projectOK(m[1]) {
			return
		}
		uid, _ := strconv.ParseInt(m[2], 10, 64)
		f.mu.Lock()
		mem, ok := f.members[uid]
		f.mu.Unlock()
		if !ok {
			f.fail(w, 404, "404 Not found", "")
			return
		}
		state := mem.State
		if state == "" {
			state = "active"
		}
		var expires any
		if mem.ExpiresAt != "" {
			expires = mem.ExpiresAt
		}
		f.json(w, 200, map[string]any{"id": uid, "username": mem.Username, "name": mem.Username, "state": state,
			"avatar_url": "https://www.gravatar.com/avatar/c2525a7f58ae3776070e44c106c48e15?s=80&d=identicon",
			"web_url":    "http://example.com/" + mem.Username, "access_level": mem.AccessLevel, "email": mem.Username + "@example.com",
			"created_at": "2012-10-22T14:13:35Z", "created_by": map[string]any{"id": 1, "username": "root", "name": "Administrator", "state": "active"},
			"expires_at": expires, "group_saml_identity": nil, "membership_state": "active"})

	case reMR.MatchString(path) && r.Method == "GET":
		m := reMR.FindStringSubmatch(path)
		if !projectOK(m[1]) {
			return
		}
		iid, _ := strconv.ParseInt(m[2], 10, 64)
		f.getMR(w, iid)

	case reMRDiffs.MatchString(path) && r.Method == "GET":
		m := reMRDiffs.FindStringSubmatch(path)
		if !projectOK(m[1]) {
			return
		}
		iid, _ := strconv.ParseInt(m[2], 10, 64)
		f.mu.Lock()
		all, ok := f.diffs[iid]
		f.mu.Unlock()
		if !ok {
			f.fail(w, 404, "404 Not found", "")
			return
		}
		q := r.URL.Query()
		per, _ := strconv.Atoi(q.Get("per_page"))
		if per <= 0 {
			per = 20
		}
		per = min(per, 100)
		page, _ := strconv.Atoi(q.Get("page"))
		page = max(page, 1)
		lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
		next := ""
		if hi < len(all) {
			next = strconv.Itoa(page + 1)
		}
		w.Header().Set("X-Next-Page", next)
		w.Header().Set("X-Page", strconv.Itoa(page))
		w.Header().Set("X-Per-Page", strconv.Itoa(per))
		out := []map[string]any{}
		for _, name := range all[lo:hi] {
			out = append(out, diffJSON(name))
		}
		f.json(w, 200, out)

	case reCompare.MatchString(path) && r.Method == "GET":
		m := reCompare.FindStringSubmatch(path)
		if !projectOK(m[1]) {
			return
		}
		q := r.URL.Query()
		f.mu.Lock()
		all, ok := f.compares[q.Get("from")+"..."+q.Get("to")]
		f.mu.Unlock()
		if !ok {
			f.fail(w, 404, "404 Not found", "")
			return
		}
		out := []map[string]any{}
		for _, name := range all {
			out = append(out, diffJSON(name))
		}
		f.json(w, 200, map[string]any{"commit": nil, "commits": []any{}, "diffs": out, "compare_timeout": false, "compare_same_ref": false,
			"web_url": "http://example.com/" + f.project + "/-/compare/" + q.Get("from") + "..." + q.Get("to")})

	default:
		f.fail(w, 404, "404 Not Found", "no route "+r.Method+" "+path)
	}
}

// list answers a notes listing with GitLab's offset paging headers.
func (f *fakeGitLab) list(w http.ResponseWriter, r *http.Request, mr bool, iid int64) {
	q := r.URL.Query()
	if q.Get("order_by") != "created_at" || q.Get("sort") != "asc" {
		f.fail(w, 400, "400 Bad request", "want order_by=created_at&sort=asc, got "+r.URL.RawQuery)
		return
	}
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 20
	}
	per = min(per, f.pageSz)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	f.mu.Lock()
	var all []map[string]any
	for _, n := range f.notes {
		if n.MR == mr && n.IID == iid {
			all = append(all, f.noteJSON(n))
		}
	}
	f.mu.Unlock()
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	w.Header().Set("X-Page", strconv.Itoa(page))
	w.Header().Set("X-Per-Page", strconv.Itoa(per))
	w.Header().Set("X-Total", strconv.Itoa(len(all)))
	w.Header().Set("X-Total-Pages", strconv.Itoa((len(all)+per-1)/per))
	if hi < len(all) {
		w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
	} else {
		w.Header().Set("X-Next-Page", "")
	}
	f.json(w, 200, append([]map[string]any{}, all[lo:hi]...))
}

// noteBody checks a create/update body: exactly {"body": "..."}, at most
// 1,000,000 characters.
func (f *fakeGitLab) noteBody(w http.ResponseWriter, body []byte) (string, bool) {
	var in map[string]*string
	if err := stickytest.StrictJSON(body, &in); err != nil || len(in) != 1 || in["body"] == nil || *in["body"] == "" {
		f.fail(w, 400, "400 Bad request - body is missing", fmt.Sprintf("%.200s", body))
		return "", false
	}
	if utf8.RuneCountInString(*in["body"]) > 1000000 {
		f.failJSON(w, 400, map[string]any{"message": map[string]any{"note": []string{"is too long (maximum is 1000000 characters)"}}})
		return "", false
	}
	return *in["body"], true
}

func (f *fakeGitLab) noteJSON(n *fakeNote) map[string]any {
	typ := "Issue"
	if n.MR {
		typ = "MergeRequest"
	}
	return map[string]any{"id": n.ID, "type": nil, "body": n.Body, "attachment": nil, "system": n.System,
		"author":     map[string]any{"id": n.AuthorID, "username": n.Username, "name": n.Username, "state": "active"},
		"created_at": "2026-11-29T09:00:00.000Z", "updated_at": "2026-11-29T09:00:00.000Z",
		"noteable_id": 100 + n.IID, "noteable_type": typ, "noteable_iid": n.IID, "project_id": 5,
		"resolvable": false, "confidential": false, "internal": false}
}

func (f *fakeGitLab) json(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (f *fakeGitLab) fail(w http.ResponseWriter, code int, msg, why string) {
	if why != "" {
		f.t.Logf("fake gitlab: %d %s: %s", code, msg, why)
	}
	f.json(w, code, map[string]string{"message": msg})
}

func (f *fakeGitLab) failJSON(w http.ResponseWriter, code int, v any) { f.json(w, code, v) }

// diffJSON is one file of a diff list as GitLab shapes it; "old => new" is
// a rename.
func diffJSON(name string) map[string]any {
	oldPath, newPath, renamed := strings.Cut(name, " => ")
	if !renamed {
		newPath = oldPath
	}
	return map[string]any{"diff": "@@ -1 +1 @@\n-a\n+b\n", "old_path": oldPath, "new_path": newPath, "a_mode": "100644", "b_mode": "100644",
		"new_file": false, "renamed_file": renamed, "deleted_file": false, "generated_file": false}
}

// labelsAPI answers GET and POST /projects/:id/labels.
func (f *fakeGitLab) labelsAPI(w http.ResponseWriter, r *http.Request, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case "GET":
		out := []map[string]any{}
		for k, l := range f.labels {
			out = append(out, map[string]any{"id": k + 1, "name": l, "color": "#ededed", "text_color": "#333333"})
		}
		f.json(w, 200, out)
	case "POST":
		var in struct {
			Name  *string `json:"name"`
			Color *string `json:"color"`
		}
		if err := stickytest.StrictJSON(body, &in); err != nil || in.Name == nil || in.Color == nil || !regexp.MustCompile(`^#[0-9a-fA-F]{6}$`).MatchString(*in.Color) {
			f.fail(w, 400, "400 Bad request", fmt.Sprintf("label %s: %v", body, err))
			return
		}
		if slices.Contains(f.labels, *in.Name) {
			f.fail(w, 409, "Label already exists", "")
			return
		}
		f.labels = append(f.labels, *in.Name)
		f.json(w, 201, map[string]any{"id": len(f.labels), "name": *in.Name, "color": *in.Color})
	default:
		f.fail(w, 405, "405 Method Not Allowed", "")
	}
}

// getMR answers GET /projects/:id/merge_requests/:iid: its head, and the
// labels, assignees and state the actions changed.
func (f *fakeGitLab) getMR(w http.ResponseWriter, iid int64) {
	f.mu.Lock()
	mr, ok := f.mrs[iid]
	st := f.mrState[iid]
	if st == nil {
		st = &fakeIssue{State: "opened"}
	}
	state, labels, as := st.State, append([]string{}, st.Labels...), f.assigneesJSON(st)
	f.mu.Unlock()
	if !ok {
		f.fail(w, 404, "404 Not found", "")
		return
	}
	src := mr.SourceProject
	if src == 0 {
		src = f.projID
	}
	f.json(w, 200, map[string]any{"id": 100 + iid, "iid": iid, "project_id": f.projID, "title": fmt.Sprintf("MR %d", iid), "state": state,
		"target_branch": mr.Target, "source_branch": mr.Source, "source_project_id": src, "target_project_id": f.projID,
		"sha": mr.SHA, "merge_commit_sha": nil, "squash_commit_sha": nil, "draft": false, "work_in_progress": false,
		"labels": labels, "assignees": as,
		"web_url":   fmt.Sprintf("http://example.com/%s/-/merge_requests/%d", f.project, iid),
		"diff_refs": map[string]any{"base_sha": strings.Repeat("1", 40), "head_sha": mr.SHA, "start_sha": strings.Repeat("1", 40)}})
}

// issueAPI answers GET and PUT /projects/:id/issues/:iid (PUT
// /projects/:id/merge_requests/:iid: mr, whose GET is getMR):
// add_labels and remove_labels (comma-separated; GitLab creates a missing
// label, the fake refuses it so a test sees hookrun never relies on that),
// assignee_ids, state_event; GitLab takes no close reason.
func (f *fakeGitLab) issueAPI(w http.ResponseWriter, r *http.Request, mr bool, iid int64, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issues[iid]
	if mr {
		is = f.mrState[iid]
		if _, ok := f.mrs[iid]; ok && is == nil {
			is = &fakeIssue{State: "opened"}
			f.mrState[iid] = is
		}
	}
	if is == nil {
		f.fail(w, 404, "404 Not found", "")
		return
	}
	if r.Method == "PUT" {
		if !f.updateIssue(w, is, body) {
			return
		}
	} else if r.Method != "GET" {
		f.fail(w, 405, "405 Method Not Allowed", "")
		return
	}
	f.json(w, 200, map[string]any{"id": 9000 + iid, "iid": iid, "project_id": f.projID, "state": is.State, "labels": append([]string{}, is.Labels...), "assignees": f.assigneesJSON(is)})
}

// updateIssue applies the PUT body of an issue or merge request to is
// (under f.mu), or answers GitLab's error: false.
func (f *fakeGitLab) updateIssue(w http.ResponseWriter, is *fakeIssue, body []byte) bool {
	var in struct {
		AddLabels    *string  `json:"add_labels"`
		RemoveLabels *string  `json:"remove_labels"`
		AssigneeIDs  *[]int64 `json:"assignee_ids"`
		StateEvent   *string  `json:"state_event"`
	}
	if err := stickytest.StrictJSON(body, &in); err != nil {
		f.fail(w, 400, "400 Bad request", fmt.Sprintf("update %s: %v", body, err))
		return false
	}
	if in.AddLabels != nil {
		for _, l := range strings.Split(*in.AddLabels, ",") {
			if !slices.Contains(f.labels, l) {
				f.fail(w, 400, "400 Bad request", "label "+l+" does not exist")
				return false
			}
			if !slices.Contains(is.Labels, l) {
				is.Labels = append(is.Labels, l)
			}
		}
	}
	if in.RemoveLabels != nil {
		for _, l := range strings.Split(*in.RemoveLabels, ",") {
			is.Labels = slices.DeleteFunc(is.Labels, func(x string) bool { return x == l })
		}
	}
	if in.AssigneeIDs != nil {
		is.Assignees = slices.DeleteFunc(slices.Clone(*in.AssigneeIDs), func(id int64) bool { return id == 0 })
	}
	if in.StateEvent != nil {
		switch *in.StateEvent {
		case "close":
			is.State = "closed"
		case "reopen":
			is.State = "opened"
		default:
			f.fail(w, 400, "400 Bad request", "state_event "+*in.StateEvent)
			return false
		}
	}
	return true
}

// assigneesJSON are is's assignees as GitLab answers them (under f.mu).
func (f *fakeGitLab) assigneesJSON(is *fakeIssue) []map[string]any {
	as := []map[string]any{}
	for _, id := range is.Assignees {
		for u, uid := range f.users {
			if uid == id {
				as = append(as, map[string]any{"id": id, "username": u})
			}
		}
	}
	return as
}

// issue is what issue n (merge request n: mr) has (forgetest.IssueFake),
// in the suite's words: state "open" or "closed". Its Reason stays "":
// GitLab takes no close reason, and a body that carries one fails
// decoding.
func (f *fakeGitLab) issue(n int, mr bool) forgetest.IssueState {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issues[int64(n)]
	if mr {
		is = f.mrState[int64(n)]
		if _, ok := f.mrs[int64(n)]; ok && is == nil {
			is = &fakeIssue{State: "opened"}
		}
	}
	if is == nil {
		return forgetest.IssueState{}
	}
	out := forgetest.IssueState{Labels: slices.Clone(is.Labels), State: map[string]string{"opened": "open", "closed": "closed"}[is.State]}
	for _, a := range f.assigneesJSON(is) {
		out.Assignees = append(out.Assignees, a["username"].(string))
	}
	for _, nt := range f.notes {
		if nt.MR == mr && nt.IID == int64(n) && nt.AuthorID == f.botID {
			out.Comments = append(out.Comments, nt.Body)
		}
	}
	return out
}
