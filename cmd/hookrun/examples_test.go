package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// stubClaude stands in for Claude Code in the simulated sandbox of
// examples/issue-triage.yaml: it checks that its prompt asks for what the
// example says, reads the issue from the event file and writes
// actions.json as an agent would, with one label the permissions allow,
// one they allow but the repository lacks, and one they do not allow.
const stubClaude = `#!/bin/sh
prompt= model=
while [ $# -gt 0 ]; do
  case "$1" in
    -p) prompt=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    *) shift ;;
  esac
done
for want in HOOKRUN_EVENT_PATH HOOKRUN_RESULTS actions.json; do
  case "$prompt" in *"$want"*) ;; *) echo "the prompt does not name $want" >&2; exit 3 ;; esac
done
title=$(jq -r .issue.title "$HOOKRUN_EVENT_PATH") || exit 4
jq -n --arg title "$title" \
  '{labels: {add: ["docs", "area/readme", "wontfix"]}, comment: ("Thanks for \"" + $title + "\": a documentation issue.")}' \
  > "$HOOKRUN_RESULTS/actions.json" || exit 5
echo "claude model=$model triaged: $title"
`

// exampleWith is examples/name with each edit's old text (which must occur
// exactly once) replaced by its new one.
func exampleWith(t *testing.T, name string, edits ...[2]string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, e := range edits {
		if n := strings.Count(s, e[0]); n != 1 {
			t.Fatalf("examples/%s holds %q %d times, want once: update the test", name, e[0], n)
		}
		s = strings.Replace(s, e[0], e[1], 1)
	}
	return s
}

// examplesServer is a `hookrun serve` with examples/ workflows against
// examplesGitHub.
type examplesServer struct {
	t        *testing.T
	gh       *examplesGitHub
	url      string
	p        *proc
	secret   string
	apiToken string
	cloneURL string
}

const (
	exGHToken   = "ghp_examplesHookrunT0ken"
	exReadToken = "github_pat_examplesReadOnlyT0ken"
)

// startExamplesServer starts `hookrun serve` (isolated host steps, as root)
// with the workflows given by file name, the sbx simulator and a stub
// Claude on PATH, STALE_READ_TOKEN and ANTHROPIC_API_KEY in its
// environment, against a fake GitHub with Codertocat/Hello-World (issue 1
// and 2, labels bug, feature, question, docs, area/queue) that also serves
// its git repository.
func startExamplesServer(t *testing.T, files map[string]string) *examplesServer {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("serve runs host steps isolated as another user: run the tests as root (CI does)")
	}
	for _, tool := range []string{"jq", "python3", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the examples' steps need %s (Debian: apt-get install %s): %v", tool, tool, err)
		}
	}
	s := &examplesServer{t: t, secret: "examples-secret", apiToken: "examples-api"}
	up := newGitUpstream(t)
	s.gh = newExamplesGitHub(t, exGHToken, exReadToken)
	s.gh.git = gitHTTPBackend(t, up.root)
	hw := s.gh.repo("Codertocat/Hello-World", "bug", "feature", "question", "docs", "area/queue")
	for _, n := range []int{1, 2} {
		hw.issues[n] = &exIssue{title: fmt.Sprintf("issue %d", n), state: "open", updated: time.Now()}
	}
	srv := httptest.NewServer(s.gh)
	t.Cleanup(srv.Close)
	s.cloneURL = srv.URL + "/Codertocat/Hello-World.git"

	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "sbx"), "github.com/hookrun/hookrun/providers/sbx/internal/sbxsim").CombinedOutput(); err != nil {
		t.Fatalf("building the sbx simulator: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(bin, "claude"), stubClaude)
	if err := os.Chmod(filepath.Join(bin, "claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range files {
		writeFile(t, filepath.Join(dir, "workflows", name), strings.ReplaceAll(body, "${FAKE_GITHUB}", srv.URL))
	}
	addr := freeAddr(t)
	cfg := writeFile(t, filepath.Join(dir, "hookrun.yaml"), `
listen: `+addr+`
data_dir: `+filepath.Join(dir, "data")+`
workflows: `+filepath.Join(dir, "workflows")+`
github: { webhook_secret: "`+s.secret+`", token: "${EX_GH_TOKEN}", api_url: "`+srv.URL+`/" }
allow_repos: ["Codertocat/*", "myorg/*"]
runner: { sbx_binary: "`+filepath.Join(bin, "sbx")+`" }
api: { token: "`+s.apiToken+`" }
shutdown_grace: 5s
`)
	s.p = startHookrun(t, "serve", []string{"EX_GH_TOKEN=" + exGHToken, "STALE_READ_TOKEN=" + exReadToken,
		"ANTHROPIC_API_KEY=sk-ant-examples", "SBXSIM_STATE=" + filepath.Join(dir, "sbx"), "PATH=" + bin + ":" + os.Getenv("PATH")},
		"serve", "--config", cfg, "--log-level", "debug")
	s.url = "http://" + addr
	waitReady(t, s.p, s.url, 60*time.Second)
	return s
}

// exRun is what the API says of a finished run.
type exRun struct {
	Status  string                    `json:"status"`
	Error   string                    `json:"error"`
	Actions *workflows.ActionsOutcome `json:"actions"`
}

// finished waits for run id to end and returns its record and logs.
func (s *examplesServer) finished(id string) (exRun, string) {
	s.t.Helper()
	var rec exRun
	waitFor(s.t, 120*time.Second, func() bool {
		return apiGet(s.t, s.url, s.apiToken, "/api/v1/runs/"+id, &rec) == http.StatusOK &&
			(rec.Status == "succeeded" || rec.Status == "failed" || rec.Status == "cancelled")
	})
	return rec, apiText(s.t, s.url, s.apiToken, "/api/v1/runs/"+id+"/logs")
}

// deliver posts a GitHub delivery and returns the one run it started.
func (s *examplesServer) deliver(event, id string, body []byte) string {
	s.t.Helper()
	code, ans := postGitHub(s.t, s.url, s.secret, event, id, body)
	if code != http.StatusAccepted || len(ans.Runs) != 1 {
		s.t.Fatalf("delivery %s: %d %+v", id, code, ans)
	}
	return ans.Runs[0].ID
}

// wantChanges compares the requests that changed an issue with want, as
// "METHOD path" and the body decoded.
func wantChanges(t *testing.T, got []exCall, want []exChange) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d changes, want %d:\ngot  %+v\nwant %+v", len(got), len(want), got, want)
		return
	}
	for i, c := range got {
		var body map[string]any
		if err := json.Unmarshal([]byte(c.Body), &body); err != nil {
			t.Errorf("change %d: body %q: %v", i, c.Body, err)
		}
		if c.Method+" "+c.Path != want[i].call || c.Token != "hookrun" || !reflect.DeepEqual(body, want[i].body) {
			t.Errorf("change %d: %s %s (token %s) %v\nwant %s %v", i, c.Method, c.Path, c.Token, body, want[i].call, want[i].body)
		}
	}
}

type exChange struct {
	call string
	body map[string]any
}

// actionComment is the body hookrun posts for a run's comment action.
func actionComment(workflow string, n int, text string) map[string]any {
	return map[string]any{"body": text + "\n\n" + forge.ActionMarker(workflow, n, text)}
}

// stickyComment is the final body of the run comment of workflow on
// issue n of Codertocat/Hello-World.
func (s *examplesServer) stickyComment(workflow string, n int) string {
	s.gh.mu.Lock()
	defer s.gh.mu.Unlock()
	for _, c := range s.gh.comments {
		if c.issue == n && strings.Contains(c.body, "<!-- hookrun:"+workflow+" -->") {
			return c.body
		}
	}
	return ""
}

// wantRefused checks that the run's record lists exactly refused (what →
// reason) as refused.
func wantRefused(t *testing.T, rec exRun, refused map[string]string) {
	t.Helper()
	got := map[string]string{}
	if rec.Actions != nil {
		for _, r := range rec.Actions.Refused {
			got[r.What] = r.Reason
		}
	}
	if !reflect.DeepEqual(got, refused) {
		t.Errorf("the run record's refused actions %v, want %v", got, refused)
	}
}

// TestExampleIssueTriage runs examples/issue-triage.yaml, unchanged, in a
// real `hookrun serve` on an issues opened delivery: its harness step
// runs Claude (a stub that does what the prompt asks) in a simulated sbx
// sandbox, which reads the issue from the event file and writes
// actions.json; hookrun then, with its own token, adds the one label that
// is allowed and exists, refuses a label the repository lacks and one
// outside permissions.labels, with the reasons, in the run's record and
// comment, and posts the agent's comment once.
func TestExampleIssueTriage(t *testing.T) {
	s := startExamplesServer(t, map[string]string{"issue-triage.yaml": exampleWith(t, "issue-triage.yaml")})
	body := patchPayload(t, "github/issues/opened.payload.json", s.cloneURL, func(map[string]any) {})
	rec, logs := s.finished(s.deliver("issues", "triage-1", body))
	if rec.Status != "succeeded" {
		t.Fatalf("run %s: %s\n%s", rec.Status, rec.Error, logs)
	}
	const title = "Spelling error in the README file"
	if !strings.Contains(logs, "claude model=haiku triaged: "+title) {
		t.Errorf("the agent did not run with the example's model on the issue:\n%s", logs)
	}
	text := `Thanks for "` + title + `": a documentation issue.`
	wantChanges(t, s.gh.changes("/repos/Codertocat/Hello-World/issues/1", "hookrun:issue-triage --"), []exChange{
		{"POST /repos/Codertocat/Hello-World/issues/1/labels", map[string]any{"labels": []any{"docs"}}},
		{"POST /repos/Codertocat/Hello-World/issues/1/comments", actionComment("issue-triage", 1, text)},
	})
	wantRefused(t, rec, map[string]string{
		`add label "area/readme" to #1`: `label "area/readme" does not exist on Codertocat/Hello-World and permissions.create_labels is not true`,
		`add label "wontfix" to #1`:     `label "wontfix" is not in permissions.labels`,
	})
	if c := s.stickyComment("issue-triage", 1); !strings.Contains(c, `label "wontfix" is not in permissions.labels`) {
		t.Errorf("the run's comment does not list the refusal:\n%s", c)
	}
	if labels, state, _, _ := s.gh.state("Codertocat/Hello-World", 1); !slices.Equal(labels, []string{"docs"}) || state != "open" {
		t.Errorf("issue 1: labels %q, state %s", labels, state)
	}
	if bad := s.gh.problems(); len(bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", bad)
	}
}

// TestExampleLabelCommand runs examples/label-command.yaml, unchanged, in
// a real `hookrun serve` on an owner's comment `/label bug area/queue
// wontfix` on issue 2: hookrun adds bug and area/queue with its own token
// and refuses wontfix, with the reason, in the run's record and comment.
func TestExampleLabelCommand(t *testing.T) {
	s := startExamplesServer(t, map[string]string{"label-command.yaml": exampleWith(t, "label-command.yaml")})
	body := patchPayload(t, "github/issue_comment/created.payload.json", s.cloneURL, func(m map[string]any) {
		m["issue"].(map[string]any)["number"] = 2
		m["comment"].(map[string]any)["body"] = "Triaged.\n/label bug area/queue wontfix\n"
	})
	rec, logs := s.finished(s.deliver("issue_comment", "label-1", body))
	if rec.Status != "succeeded" {
		t.Fatalf("run %s: %s\n%s", rec.Status, rec.Error, logs)
	}
	wantChanges(t, s.gh.changes("/repos/Codertocat/Hello-World/issues/2", "hookrun:label-command --"), []exChange{
		{"POST /repos/Codertocat/Hello-World/issues/2/labels", map[string]any{"labels": []any{"bug", "area/queue"}}},
	})
	wantRefused(t, rec, map[string]string{`add label "wontfix" to #2`: `label "wontfix" is not in permissions.labels`})
	if c := s.stickyComment("label-command", 2); !strings.Contains(c, `label "wontfix" is not in permissions.labels`) {
		t.Errorf("the run's comment does not list the refusal:\n%s", c)
	}
	if labels, _, _, _ := s.gh.state("Codertocat/Hello-World", 2); !slices.Equal(labels, []string{"bug", "area/queue"}) {
		t.Errorf("issue 2: labels %q", labels)
	}
	if bad := s.gh.problems(); len(bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", bad)
	}
}

// TestExampleStaleSweep runs examples/stale-sweep.yaml's step for real in
// a real `hookrun serve`, started as an operator's run on myorg/app (the
// schedule's own ticks are TestScheduleTwoServersOneRunPerTick's), with
// two changes: the step runs on the host rather than in python:3.13-alpine
// (no Docker here), and GITHUB_API_URL is the fake's. The step lists the
// open issues page by page with the read-only token from its declared
// secret, skips the pull request, the keep-open issue and everything
// updated within 90 days, and writes the two stale issues as targets;
// hookrun closes them as not planned and comments, with its own token. The
// read-only token changes nothing and appears in no log.
func TestExampleStaleSweep(t *testing.T) {
	wf := exampleWith(t, "stale-sweep.yaml",
		[2]string{"    container: { image: \"python:3.13-alpine\" }\n", ""},
		[2]string{"GITHUB_API_URL: https://api.github.com", "GITHUB_API_URL: ${FAKE_GITHUB}"})
	s := startExamplesServer(t, map[string]string{"stale-sweep.yaml": wf})
	app := s.gh.repo("myorg/app", "keep-open")
	day := 24 * time.Hour
	for n, is := range map[int]*exIssue{
		11: {title: "stale", updated: time.Now().Add(-200 * day)},
		12: {title: "stale pull request", updated: time.Now().Add(-190 * day), pr: true},
		13: {title: "stale, kept open", updated: time.Now().Add(-180 * day), labels: []string{"keep-open"}},
		14: {title: "stale too", updated: time.Now().Add(-120 * day)},
		15: {title: "recent", updated: time.Now().Add(-10 * day)},
		16: {title: "recent too", updated: time.Now().Add(-5 * day)},
		17: {title: "closed long ago", updated: time.Now().Add(-300 * day), state: "closed", reason: "completed"},
	} {
		if is.state == "" {
			is.state = "open"
		}
		app.issues[n] = is
	}

	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v1/workflows/stale-sweep/runs", strings.NewReader(`{"repo": "myorg/app"}`))
	req.Header.Set("Authorization", "Bearer "+s.apiToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var started struct{ Run string }
	_ = json.NewDecoder(resp.Body).Decode(&started)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || started.Run == "" {
		t.Fatalf("starting stale-sweep: %d %+v", resp.StatusCode, started)
	}
	rec, logs := s.finished(started.Run)
	if rec.Status != "succeeded" || !strings.Contains(logs, "2 stale issue(s) in myorg/app") {
		t.Fatalf("run %s: %s\n%s", rec.Status, rec.Error, logs)
	}
	const list = "GET /repos/myorg/app/issues?state=open&sort=updated&direction=asc&per_page=100&page="
	if got := s.gh.callsBy("read"); !slices.Equal(got, []string{list + "1", list + "2", list + "3"}) {
		t.Errorf("requests with the read-only token %q, want the three pages of the listing", got)
	}
	text := "Closing this issue: no activity for 90 days. Comment and reopen it if it still matters (or label it keep-open)."
	var want []exChange
	for _, n := range []int{11, 14} {
		want = append(want,
			exChange{fmt.Sprintf("PATCH /repos/myorg/app/issues/%d", n), map[string]any{"state": "closed", "state_reason": "not_planned"}},
			exChange{fmt.Sprintf("POST /repos/myorg/app/issues/%d/comments", n), actionComment("stale-sweep", n, text)})
	}
	wantChanges(t, s.gh.changes("/repos/myorg/app", "hookrun:stale-sweep --"), want)
	wantRefused(t, rec, map[string]string{})
	for n, wantState := range map[int]string{11: "closed", 12: "open", 13: "open", 14: "closed", 15: "open", 16: "open", 17: "closed"} {
		if _, state, _, _ := s.gh.state("myorg/app", n); state != wantState {
			t.Errorf("myorg/app#%d is %s, want %s", n, state, wantState)
		}
	}
	if strings.Contains(logs, exReadToken) || strings.Contains(s.p.out.String(), exReadToken) {
		t.Errorf("the read-only token appears in the run's logs or hookrun's log")
	}
	if bad := s.gh.problems(); len(bad) > 0 {
		t.Errorf("requests the real API would refuse: %v", bad)
	}
}

// TestRunGivesCommandArgs: `hookrun run` of examples/label-command.yaml on
// an issue_comment payload sets HOOKRUN_COMMAND_ARGS as a delivery's run
// would (the first command line's arguments, saying that a delivery runs
// the second too), so the labels the step asks for are the command's.
func TestRunGivesCommandArgs(t *testing.T) {
	payload := patchPayload(t, "github/issue_comment/created.payload.json", "https://github.com/Codertocat/Hello-World.git", func(m map[string]any) {
		m["comment"].(map[string]any)["body"] = "Triaged.\n/label bug area/queue wontfix\n> /label quoted\n/label question\n"
	})
	event := writeFile(t, filepath.Join(t.TempDir(), "comment.json"), string(payload))
	code, stdout, stderr := runCLI(t, "run", "../../examples/label-command.yaml", "--event", event, "--event-name", "issue_comment", "--dir", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var res struct {
		Results struct {
			Actions struct {
				Labels struct{ Add []string }
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if got := res.Results.Actions.Labels.Add; !slices.Equal(got, []string{"bug", "area/queue", "wontfix"}) {
		t.Errorf("the step asked to add %q, want the first command's arguments", got)
	}
	if want := `the comment has 2 command lines for label-command; a delivery runs each, this runs the first ("/label bug area/queue wontfix")`; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}

// TestLabelCommandDocsShowTheExample: docs/workflows.md's `/label`
// workflow is examples/label-command.yaml (without its header comment), so
// the tested example is what the docs show.
func TestLabelCommandDocsShowTheExample(t *testing.T) {
	example := exampleWith(t, "label-command.yaml")
	var body []string
	for _, l := range strings.SplitAfter(example, "\n") {
		if len(body) > 0 || !strings.HasPrefix(l, "#") {
			body = append(body, l)
		}
	}
	docs, err := os.ReadFile("../../docs/workflows.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "```yaml\n" + strings.Join(body, "") + "```\n"; !strings.Contains(string(docs), want) {
		t.Errorf("docs/workflows.md does not show examples/label-command.yaml:\n%s", want)
	}
}
