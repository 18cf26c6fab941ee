package ingress

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// strictWorkflow matches a closed pull request and authorizes members only
// (the fixtures' author is the OWNER).
const strictWorkflow = `name: strict
on:
  - event: pull_request
    actions: [closed]
authorize: { author_association: [MEMBER] }
steps:
  - id: s
    run: "true"
`

// deliveryRows lists GET /api/v1/deliveries?query as "id outcome" rows.
func deliveryRows(t *testing.T, env *testEnv, query string) ([]string, string) {
	t.Helper()
	code, b := apiDo(t, env, http.MethodGet, "/api/v1/deliveries"+query, testAPIToken)
	var page struct {
		Deliveries []stores.DeliverySummary `json:"deliveries"`
		Next       string                   `json:"next_cursor"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(b), &page) != nil || page.Deliveries == nil {
		t.Fatalf("GET /api/v1/deliveries%s: %d %s", query, code, b)
	}
	var rows []string
	for _, d := range page.Deliveries {
		rows = append(rows, d.ID+" "+d.Outcome)
	}
	return rows, page.Next
}

// TestDeliveriesAPI: every stored delivery is listed newest first with
// what became of it (ran, skipped, refused, duplicate), filtered by forge,
// repository, event and outcome, in pages; one delivery shows the headers
// that say what was sent (no signature), the normalized event, every
// workflow considered (matched or not, and why it did not run), its runs
// and its replays. Unknown: 404; no token: 401; bad filters: 400.
func TestDeliveriesAPI(t *testing.T) {
	env, _, _ := rerunEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow, "strict.yaml": strictWorkflow})
	opened := readFile(t, githubFixtures+"pull_request/opened.payload.json")
	ran := env.github(t, "pull_request", "d-ran", opened)
	if ran.Code != http.StatusAccepted || len(ran.Runs) != 1 {
		t.Fatalf("opened: %d %s", ran.Code, ran.Raw)
	}
	if a := env.github(t, "pull_request", "d-refused", readFile(t, githubFixtures+"pull_request/closed.payload.json")); a.Code != http.StatusAccepted || len(a.Runs) != 0 {
		t.Fatalf("closed: %d %s", a.Code, a.Raw)
	}
	if a := env.github(t, "push", "d-skip", readFile(t, githubFixtures+"push/payload.json")); a.Code != http.StatusAccepted || len(a.Runs) != 0 {
		t.Fatalf("push: %d %s", a.Code, a.Raw)
	}
	if a := env.github(t, "pull_request", "d-ran", opened); a.Code != http.StatusAccepted || !a.Duplicate {
		t.Fatalf("redelivery: %d %s", a.Code, a.Raw)
	}

	all := []string{"d-ran duplicate", "d-skip skipped", "d-refused refused", "d-ran ran"}
	for query, want := range map[string][]string{
		"":                                all,
		"?outcome=refused":                all[2:3],
		"?outcome=ran":                    all[3:],
		"?event=push":                     all[1:2],
		"?repo=Codertocat/Hello-World":    all,
		"?repo=other/repo":                nil,
		"?forge=github&outcome=skipped":   all[1:2],
		"?forge=gitlab":                   nil,
		"?event=pull_request&outcome=ran": all[3:],
	} {
		if got, _ := deliveryRows(t, env, query); !slices.Equal(got, want) {
			t.Errorf("deliveries%s: %q, want %q", query, got, want)
		}
	}
	var paged []string
	for query, pages := "?limit=3", 0; ; pages++ {
		rows, next := deliveryRows(t, env, query)
		paged = append(paged, rows...)
		if next == "" || pages > 2 {
			break
		}
		query = "?limit=3&cursor=" + next
	}
	if !slices.Equal(paged, all) {
		t.Errorf("pages of 3: %q, want %q", paged, all)
	}
	for _, query := range []string{"?outcome=maybe", "?forge=nope", "?status=failed", "?limit=0", "?cursor=x.1"} {
		if code, b := apiDo(t, env, http.MethodGet, "/api/v1/deliveries"+query, testAPIToken); code != http.StatusBadRequest {
			t.Errorf("deliveries%s: %d %s, want 400", query, code, b)
		}
	}

	code, b := apiDo(t, env, http.MethodGet, "/api/v1/deliveries/d-refused?forge=github", testAPIToken)
	var v struct {
		Outcome    string              `json:"outcome"`
		Repo       string              `json:"repo"`
		Headers    map[string]string   `json:"headers"`
		Workflows  []stores.Considered `json:"workflows"`
		Normalized struct {
			Kind   string `json:"kind"`
			Action string `json:"action"`
		} `json:"normalized"`
		Runs    []stores.ReceivedRun `json:"runs"`
		Replays []stores.Replay      `json:"replays"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(b), &v) != nil {
		t.Fatalf("GET d-refused: %d %s", code, b)
	}
	if v.Outcome != stores.OutcomeRefused || v.Repo != "Codertocat/Hello-World" || v.Normalized.Kind != "pull_request" || v.Normalized.Action != "closed" {
		t.Errorf("d-refused: %s", b)
	}
	if v.Headers["X-Github-Event"] != "pull_request" || v.Headers["X-Github-Delivery"] != "d-refused" || strings.Contains(b, "sha256=") {
		t.Errorf("d-refused's headers %v: want the event and delivery, never the signature", v.Headers)
	}
	want := []stores.Considered{{Workflow: "pr-check", Reason: v.Workflows[0].Reason}, {Workflow: "strict", Matched: true, Reason: v.Workflows[1].Reason}}
	if len(v.Workflows) != 2 || !slices.Equal(v.Workflows, want) || !strings.Contains(v.Workflows[1].Reason, "author association OWNER") || v.Workflows[0].Reason == "" {
		t.Errorf("d-refused's workflows %+v", v.Workflows)
	}
	code, b = apiDo(t, env, http.MethodGet, "/api/v1/deliveries/d-ran", testAPIToken)
	if code != http.StatusOK || json.Unmarshal([]byte(b), &v) != nil || len(v.Runs) != 1 || v.Runs[0].ID != ran.Runs[0].ID || v.Outcome != stores.OutcomeRan ||
		!slices.ContainsFunc(v.Workflows, func(c stores.Considered) bool { return c.Workflow == "pr-check" && c.Matched && c.Ran }) {
		t.Errorf("d-ran: %d %s, want its run %s", code, b, ran.Runs[0].ID)
	}

	if code, b := apiDo(t, env, http.MethodPost, "/api/v1/deliveries/d-refused/replay", testAPIToken); code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, b)
	}
	code, b = apiDo(t, env, http.MethodGet, "/api/v1/deliveries/d-refused", testAPIToken)
	v.Replays = nil
	if code != http.StatusOK || json.Unmarshal([]byte(b), &v) != nil || len(v.Replays) != 1 || v.Replays[0].ID != "d-refused:replay:1" {
		t.Errorf("after a replay: %d %s", code, b)
	}

	if code, b := apiDo(t, env, http.MethodGet, "/api/v1/deliveries/nope", testAPIToken); code != http.StatusNotFound || !strings.Contains(b, "kept for") {
		t.Errorf("unknown delivery: %d %s", code, b)
	}
	if code, _ := apiDo(t, env, http.MethodGet, "/api/v1/deliveries/d-ran?forge=nope", testAPIToken); code != http.StatusBadRequest {
		t.Errorf("unknown forge: %d, want 400", code)
	}
	for _, path := range []string{"/api/v1/deliveries", "/api/v1/deliveries/d-ran"} {
		if code, _ := apiDo(t, env, http.MethodGet, path, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", path, code)
		}
	}
}

// unmatchedRows are the rows of GET /api/v1/deliveries as "id outcome reason".
func unmatchedRows(t *testing.T, env *testEnv, query string) []string {
	t.Helper()
	code, b := apiDo(t, env, http.MethodGet, "/api/v1/deliveries"+query, testAPIToken)
	var page struct {
		Deliveries []stores.DeliverySummary `json:"deliveries"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(b), &page) != nil {
		t.Fatalf("GET /api/v1/deliveries%s: %d %s", query, code, b)
	}
	var rows []string
	for _, d := range page.Deliveries {
		rows = append(rows, d.ID+" "+d.Outcome+" "+d.Reason)
	}
	return rows
}

// TestDeliveriesUnmatched: every verified delivery is listed, also one
// that is not matched against the workflows, with its outcome and the
// reason its webhook answer gave: a repository outside allow_repos
// (refused, "repository not allowed"), an event hookrun does not handle
// (skipped), a payload that does not decode or has a field of an
// unexpected type a workflow may need (refused, the decoder's words), a
// ping (skipped). The answers are what they were; such a delivery is
// stored without its body, and a replay of it is refused with the same
// reason (422). A delivery with a bad signature is not stored.
func TestDeliveriesUnmatched(t *testing.T) {
	env, _, _ := rerunEnv(t, Config{AllowRepos: []string{"codertocat/*"}}, map[string]string{"pr.yaml": prWorkflow, "push.yaml": pushWorkflow})
	stranger := patchJSON(t, githubFixtures+"pull_request/opened.payload.json", func(m map[string]any) {
		obj(m, "repository")["full_name"] = "stranger/repo"
	})
	if a := env.github(t, "pull_request", "d-stranger", stranger); a.Code != http.StatusAccepted || !strings.Contains(a.Raw, `"ignored":"repository not allowed"`) {
		t.Fatalf("not allowed: %d %s", a.Code, a.Raw)
	}
	if a := env.github(t, "check_run", "d-unhandled", []byte(`{}`)); a.Code != http.StatusAccepted || a.Reason != "event check_run is not handled" {
		t.Fatalf("unhandled: %d %s", a.Code, a.Raw)
	}
	if a := env.github(t, "push", "d-truncated", []byte(`{"ref": "refs/heads/main", "after": `)); a.Code != http.StatusBadRequest || a.Error != "malformed payload" {
		t.Fatalf("truncated: %d %s", a.Code, a.Raw)
	}
	pushAfter := patchJSON(t, githubFixtures+"push/payload.json", func(m map[string]any) { m["after"] = 123 })
	if a := env.github(t, "push", "d-drift", pushAfter); a.Code != http.StatusBadRequest || !strings.Contains(a.Error, "field after has an unexpected type") {
		t.Fatalf("drifted: %d %s", a.Code, a.Raw)
	}
	if a := env.github(t, "ping", "d-ping", []byte(`{"zen":"hi"}`)); a.Code != http.StatusOK {
		t.Fatalf("ping: %d %s", a.Code, a.Raw)
	}
	h := http.Header{}
	h.Set("X-GitHub-Event", "pull_request")
	h.Set("X-GitHub-Delivery", "d-forged")
	h.Set("X-Hub-Signature-256", sign("not-the-secret", stranger))
	if a := env.do(t, "/hooks/github", h, bytes.NewReader(stranger)); a.Code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d %s", a.Code, a.Raw)
	}

	rows := unmatchedRows(t, env, "")
	if len(rows) != 5 {
		t.Fatalf("deliveries %q, want the 5 verified ones", rows)
	}
	for i, want := range []string{
		"d-ping skipped a ping: the forge checks the webhook",
		"d-drift refused malformed payload: field after has an unexpected type",
		"d-truncated refused parsing github event \"push\": malformed payload: ",
		"d-unhandled skipped event check_run is not handled",
		"d-stranger refused repository not allowed",
	} {
		if !strings.HasPrefix(rows[i], want) {
			t.Errorf("row %d %q, want %q…", i, rows[i], want)
		}
	}
	if !strings.Contains(rows[2], "unexpected EOF") {
		t.Errorf("the truncated body's reason %q does not say what its decoding said", rows[2])
	}
	if got := unmatchedRows(t, env, "?outcome=refused&repo=stranger/repo"); !slices.Equal(got, []string{"d-stranger refused repository not allowed"}) {
		t.Errorf("refused in stranger/repo: %q", got)
	}
	if got := unmatchedRows(t, env, "?outcome=skipped&forge=github"); len(got) != 2 || !strings.HasPrefix(got[1], "d-unhandled skipped") {
		t.Errorf("skipped: %q", got)
	}

	code, b := apiDo(t, env, http.MethodGet, "/api/v1/deliveries/d-stranger?forge=github", testAPIToken)
	var v struct {
		Outcome, Reason, Repo, Kind string
		Headers                     map[string]string
		Normalized                  *json.RawMessage
	}
	if code != http.StatusOK || json.Unmarshal([]byte(b), &v) != nil || v.Outcome != stores.OutcomeRefused || v.Reason != "repository not allowed" ||
		v.Repo != "stranger/repo" || v.Kind != "pull_request" || v.Headers["X-Github-Delivery"] != "d-stranger" || strings.Contains(b, "sha256=") {
		t.Errorf("GET d-stranger: %d %s", code, b)
	}
	if d, err := env.q.Received().Get(context.Background(), workflows.Forge("github"), "d-stranger"); err != nil || len(d.Raw) != 0 {
		t.Errorf("d-stranger is stored with a body of %d bytes (%v), want none", len(d.Raw), err)
	}
	code, b = apiDo(t, env, http.MethodPost, "/api/v1/deliveries/d-stranger/replay", testAPIToken)
	if code != http.StatusUnprocessableEntity || !strings.Contains(b, "repository not allowed") || !strings.Contains(b, "redeliver it from the forge") {
		t.Errorf("replay of d-stranger: %d %s, want 422 with its refusal", code, b)
	}
	if code, b := apiDo(t, env, http.MethodGet, "/api/v1/deliveries/d-forged", testAPIToken); code != http.StatusNotFound {
		t.Errorf("the delivery with a bad signature: %d %s, want 404", code, b)
	}
	if ids := streamRunIDs(t, env.q); len(ids) != 0 {
		t.Errorf("stream holds %v", ids)
	}
}

// TestDeliveriesUnmatchedUnverified: with --insecure-no-verify, a forge
// without a secret takes deliveries nobody signed; one that is not matched
// against the workflows is anyone's, and is not stored.
func TestDeliveriesUnmatchedUnverified(t *testing.T) {
	env, _, _ := rerunEnv(t, Config{InsecureNoVerify: true, AllowRepos: []string{"codertocat/*"},
		Forges: registry(hooks(workflows.Forge("github"), true))}, map[string]string{"pr.yaml": prWorkflow})
	stranger := patchJSON(t, githubFixtures+"pull_request/opened.payload.json", func(m map[string]any) {
		obj(m, "repository")["full_name"] = "stranger/repo"
	})
	if a := env.github(t, "pull_request", "d-unsigned", stranger); a.Code != http.StatusAccepted || !strings.Contains(a.Raw, "repository not allowed") {
		t.Fatalf("not allowed: %d %s", a.Code, a.Raw)
	}
	if a := env.github(t, "pull_request", "d-allowed", readFile(t, githubFixtures+"pull_request/opened.payload.json")); a.Code != http.StatusAccepted || len(a.Runs) != 1 {
		t.Fatalf("allowed: %d %s", a.Code, a.Raw)
	}
	if rows := unmatchedRows(t, env, ""); !slices.Equal(rows, []string{"d-allowed ran "}) {
		t.Errorf("deliveries %q, want only the accepted one", rows)
	}
}
