package github

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// pullsAPI is POST and GET /repos/Codertocat/Hello-World/pulls as GitHub
// answers them: a token, a JSON body with title, head, base and draft;
// 422 when a pull request for head is open already.
type pullsAPI struct {
	t    *testing.T
	open map[string]int // head → number of the open pull request

	mu    sync.Mutex
	posts []map[string]any
	lists []string // query strings of GETs
	bad   []string
}

func (a *pullsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer gh-draft-token" {
		a.bad = append(a.bad, "auth "+r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.URL.Path != "/repos/Codertocat/Hello-World/pulls" {
		a.bad = append(a.bad, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodPost:
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &body); err != nil {
			a.bad = append(a.bad, "body not JSON")
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		a.posts = append(a.posts, body)
		head, _ := body["head"].(string)
		if _, exists := a.open[head]; exists {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for Codertocat:`+head+`."}]}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"number":12,"draft":true,"html_url":"https://github.com/Codertocat/Hello-World/pull/12"}`)
	case http.MethodGet:
		a.lists = append(a.lists, r.URL.RawQuery)
		head := strings.TrimPrefix(r.URL.Query().Get("head"), "Codertocat:")
		if n, ok := a.open[head]; ok && r.URL.Query().Get("state") == "open" {
			_ = json.NewEncoder(w).Encode([]map[string]any{{"number": n, "html_url": "https://github.com/Codertocat/Hello-World/pull/9"}})
			return
		}
		_, _ = io.WriteString(w, `[]`)
	default:
		a.bad = append(a.bad, r.Method)
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// TestOpenDraft: a draft pull request is opened with draft: true, the
// delivered branch as head and the pull request's head branch as base; when
// GitHub says one is open for that head already, that one is returned.
func TestOpenDraft(t *testing.T) {
	api := &pullsAPI{t: t, open: map[string]int{"hookrun/fix/3": 9}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	r, err := New(Config{APIURL: srv.URL + "/", Token: "gh-draft-token", Client: forge.Client{MaxWait: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ev := &workflows.Event{Forge: Name, Repo: "Codertocat/Hello-World"}
	ctx := context.Background()

	cr, err := r.OpenDraft(ctx, contract.DraftRequest{Event: ev, Head: "hookrun/fix/2", Base: "changes", Title: "the agent's commits", Body: "see"})
	if err != nil || cr != (workflows.ChangeRequest{Number: 12, URL: "https://github.com/Codertocat/Hello-World/pull/12"}) {
		t.Fatalf("OpenDraft: %+v, %v", cr, err)
	}
	cr, err = r.OpenDraft(ctx, contract.DraftRequest{Event: ev, Head: "hookrun/fix/3", Base: "changes", Title: "again", Body: "see"})
	if err != nil || cr.Number != 9 {
		t.Fatalf("OpenDraft of a branch with an open pull request: %+v, %v; want #9", cr, err)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.bad) > 0 {
		t.Errorf("requests GitHub would refuse: %v", api.bad)
	}
	want := map[string]any{"title": "the agent's commits", "head": "hookrun/fix/2", "base": "changes", "body": "see", "draft": true}
	if len(api.posts) != 2 || !sameJSON(api.posts[0], want) {
		t.Errorf("POST bodies %v, want first %v", api.posts, want)
	}
	if len(api.lists) != 1 || !strings.Contains(api.lists[0], "head=Codertocat%3Ahookrun%2Ffix%2F3") || !strings.Contains(api.lists[0], "state=open") {
		t.Errorf("list queries %v, want one for the open pull request of Codertocat:hookrun/fix/3", api.lists)
	}

	if _, err := r.OpenDraft(ctx, contract.DraftRequest{Event: &workflows.Event{Forge: workflows.Forge("gitlab"), Repo: "a/b"}}); err == nil {
		t.Error("OpenDraft took a GitLab event")
	}
}

func sameJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
