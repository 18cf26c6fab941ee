package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores/storestest"
	"github.com/hookrun/hookrun/workflows"
)

// fakeHookAPI serves GitHub's repository webhook deliveries endpoints: the
// list (GET, newest first, one cursor page per 2 deliveries) and
// redelivery (POST .../attempts: 202), with the token checked.
type fakeHookAPI struct {
	mu     sync.Mutex
	dels   []map[string]any
	redone []string
	bad    []string // requests that did not look like the API's
}

func (f *fakeHookAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer ghp_recover" {
		f.bad = append(f.bad, "auth "+r.Method+" "+r.URL.Path)
		w.WriteHeader(401)
		return
	}
	const list = "/api/v3/repos/acme/api/hooks/42/deliveries"
	switch {
	case r.Method == "GET" && r.URL.Path == list:
		start := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			fmt.Sscan(c, &start)
		}
		end := min(start+2, len(f.dels))
		if end < len(f.dels) {
			w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?cursor=%d&per_page=2>; rel="next"`, r.Host, list, end))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(f.dels[start:end])
	case r.Method == "POST" && strings.HasPrefix(r.URL.Path, list+"/") && strings.HasSuffix(r.URL.Path, "/attempts"):
		f.redone = append(f.redone, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, list+"/"), "/attempts"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(202)
		_, _ = w.Write([]byte("{}"))
	default:
		f.bad = append(f.bad, r.Method+" "+r.URL.Path)
		w.WriteHeader(404)
	}
}

func delivery(id int, guid string, code int, at time.Time) map[string]any {
	status := "OK"
	if code != 200 {
		status = "failed"
	}
	return map[string]any{"id": id, "guid": guid, "delivered_at": at.UTC().Format(time.RFC3339), "redelivery": false,
		"duration": 0.1, "status": status, "status_code": code, "event": "pull_request", "action": "opened", "installation_id": nil, "repository_id": 1}
}

// Run redelivers each delivery none of whose attempts succeeded, once,
// unless hookrun stored it or the body itself was refused; a dry run only
// says so; what is older than since is left alone.
func TestRun(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	api := &fakeHookAPI{dels: []map[string]any{
		delivery(10, "g-redone-ok", 200, now.Add(-1*time.Minute)), // a redelivery that worked...
		delivery(9, "g-down", 503, now.Add(-2*time.Minute)),       // hookrun was down
		delivery(8, "g-redone-ok", 502, now.Add(-3*time.Minute)),  // ...of this failure
		delivery(7, "g-late", 0, now.Add(-4*time.Minute)),         // timed out after it was stored
		delivery(6, "g-malformed", 400, now.Add(-5*time.Minute)),  // refused body
		delivery(5, "g-timeout", 0, now.Add(-6*time.Minute)),      // timed out, not stored
		delivery(4, "g-old", 503, now.Add(-7*time.Hour)),          // outside since
		delivery(3, "g-older", 503, now.Add(-8*time.Hour)),
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	rep, err := github.New(github.Config{APIURL: srv.URL + "/api/v3/", Token: "ghp_recover", BotLogin: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := queue.Open(ctx, queue.Config{RequestKey: []byte("test-request-key-0123456789abcdef-0123"), DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	q := storestest.With(t, raw)
	defer q.Close()
	if _, err := q.PublishDelivery(ctx, []*queue.RunRequest{{Workflow: "review",
		Event: workflows.Event{Forge: github.Name, Kind: workflows.KindPullRequest, DeliveryID: "g-late", Repo: "acme/api"}}}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Hooks: []github.Hook{{Repo: "acme/api", ID: 42}}, Since: 6 * time.Hour, Now: func() time.Time { return now }}

	dry := cfg
	dry.DryRun = true
	r, err := Run(ctx, rep, q, dry)
	if err != nil {
		t.Fatal(err)
	}
	did := func(r Report) map[string]string {
		m := map[string]string{}
		for _, o := range r.Failed {
			m[o.GUID] = o.Did
		}
		return m
	}
	want := map[string]string{"g-down": WouldRedeliver, "g-late": AlreadyStored, "g-malformed": Permanent, "g-timeout": WouldRedeliver}
	if got := did(r); fmt.Sprint(got) != fmt.Sprint(want) || len(api.redone) != 0 {
		t.Fatalf("dry run: %v (redelivered %v), want %v", got, api.redone, want)
	}

	r, err = Run(ctx, rep, q, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want["g-down"], want["g-timeout"] = Redelivered, Redelivered
	if got := did(r); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("run: %v, want %v", got, want)
	}
	if !slices.Equal(api.redone, []string{"9", "5"}) {
		t.Fatalf("redelivered attempts %v, want [9 5]", api.redone)
	}
	if r.Listed != 6 || r.Unstored {
		t.Fatalf("listed %d unstored %v", r.Listed, r.Unstored)
	}
	if len(api.bad) > 0 {
		t.Fatalf("requests unlike GitHub's API: %v", api.bad)
	}
	if err := (Config{}).Validate(); err == nil || !strings.Contains(err.Error(), "no webhook to list") {
		t.Fatalf("nothing configured: %v", err)
	}
}
