package gitlab

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// mrAPI is POST and GET /projects/group%2Fproject/merge_requests as GitLab
// answers them: PRIVATE-TOKEN, a JSON body; 409 when a merge request of
// that source branch is open already.
type mrAPI struct {
	open map[string]int // source branch → iid of the open merge request

	mu    sync.Mutex
	posts []map[string]any
	gets  []string
	bad   []string
}

func (a *mrAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("PRIVATE-TOKEN") != "gl-draft-token" {
		a.bad = append(a.bad, "auth")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.URL.EscapedPath() != "/api/v4/projects/group%2Fproject/merge_requests" {
		a.bad = append(a.bad, r.Method+" "+r.URL.EscapedPath())
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
		src, _ := body["source_branch"].(string)
		if _, ok := a.open[src]; ok {
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"message":["Another open merge request already exists for this source branch: !4"]}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":1,"iid":21,"draft":true,"web_url":"https://gitlab.example/group/project/-/merge_requests/21"}`)
	case http.MethodGet:
		a.gets = append(a.gets, r.URL.RawQuery)
		if iid, ok := a.open[r.URL.Query().Get("source_branch")]; ok && r.URL.Query().Get("state") == "opened" {
			_ = json.NewEncoder(w).Encode([]map[string]any{{"id": 2, "iid": iid, "web_url": "https://gitlab.example/group/project/-/merge_requests/4"}})
			return
		}
		_, _ = io.WriteString(w, `[]`)
	}
}

// TestOpenDraft: a draft merge request ("Draft: " title) from the delivered
// branch into the merge request's source branch; a 409 for a branch with an
// open one returns that one. The description's quick action line is
// inert (the body is the agent's).
func TestOpenDraft(t *testing.T) {
	api := &mrAPI{open: map[string]int{"hookrun/fix/3": 4}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	r, err := New(Config{BaseURL: srv.URL, Token: "gl-draft-token", Client: forge.Client{MaxWait: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ev := &workflows.Event{Forge: Name, Repo: "group/project"}
	ctx := context.Background()
	cr, err := r.OpenDraft(ctx, contract.DraftRequest{Event: ev, Head: "hookrun/fix/2", Base: "feature", Title: "the agent's commits", Body: "see\n/approve"})
	if err != nil || cr != (workflows.ChangeRequest{Number: 21, URL: "https://gitlab.example/group/project/-/merge_requests/21"}) {
		t.Fatalf("OpenDraft: %+v, %v", cr, err)
	}
	cr, err = r.OpenDraft(ctx, contract.DraftRequest{Event: ev, Head: "hookrun/fix/3", Base: "feature", Title: "again"})
	if err != nil || cr.Number != 4 {
		t.Fatalf("OpenDraft of a branch with an open merge request: %+v, %v; want !4", cr, err)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.bad) > 0 {
		t.Errorf("requests GitLab would refuse: %v", api.bad)
	}
	if len(api.posts) != 2 || api.posts[0]["title"] != "Draft: the agent's commits" || api.posts[0]["source_branch"] != "hookrun/fix/2" ||
		api.posts[0]["target_branch"] != "feature" || api.posts[0]["description"] != "see\n\\/approve" {
		t.Errorf("POST bodies %v", api.posts)
	}
	if len(api.gets) != 1 {
		t.Errorf("GETs %v, want one lookup of the open merge request", api.gets)
	}
}
