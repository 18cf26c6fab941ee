package ingress

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/decide"
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/gitea"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/stores/storestest"
	"github.com/hookrun/hookrun/workflows"
)

const (
	testGitHubSecret = "gh-test-secret-value"
	testGitLabToken  = "gl-test-token-value"
)

// logBuffer collects every log line (debug included) so tests can assert
// what was and was not logged.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// openQueue starts a real embedded NATS server with JetStream in dir,
// listening on a loopback port so tests can inspect the stream.
func openQueue(t testing.TB, dir string) *storestest.Queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Generous publish timeout: these tests check what is persisted, and
	// `make test` runs them beside every other package on two cores.
	q, err := queue.Open(ctx, queue.Config{RequestKey: []byte("test-request-key-0123456789abcdef-0123"), DataDir: dir, Listen: "127.0.0.1:0", PublishTimeout: 30 * time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("opening queue: %v", err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return storestest.With(t, q)
}

// streamRunIDs returns the run ids of every message in HOOKRUN_RUNS.
func streamRunIDs(t testing.TB, q *storestest.Queue) []string {
	t.Helper()
	var ids []string
	for _, r := range streamRequests(t, q) {
		ids = append(ids, r.ID)
	}
	return ids
}

// streamRequests reads every message of HOOKRUN_RUNS through a separate
// NATS client.
func streamRequests(t testing.TB, q *storestest.Queue) []queue.RunRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := q.Connect("test")
	if err != nil {
		t.Fatalf("connecting to nats: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, queue.StreamRuns)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []queue.RunRequest
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted (work-queue) or a gap
		}
		var req queue.RunRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			t.Fatalf("decoding stream message %d: %v", seq, err)
		}
		reqs = append(reqs, req)
	}
	if uint64(len(reqs)) != info.State.Msgs {
		t.Fatalf("read %d messages, stream state says %d", len(reqs), info.State.Msgs)
	}
	return reqs
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const reviewWorkflow = `name: review
on:
  - event: comment
    command: /review
steps:
  - id: review
    run: echo "$HOOKRUN_COMMAND_ARGS"
`

const prWorkflow = `name: pr-check
on:
  - event: pull_request
    actions: [opened, synchronize]
steps:
  - id: check
    run: make check
`

// testEnv is an ingress server on a real queue, behind httptest.
type testEnv struct {
	srv  *Server
	http *httptest.Server
	q    *storestest.Queue
	logs *logBuffer
}

func newEnv(t testing.TB, cfg Config, workflowFiles map[string]string, opts ...func(*Deps)) *testEnv {
	t.Helper()
	q := openQueue(t, t.TempDir())
	return newEnvWith(t, cfg, q, workflowFiles, opts...)
}

func newEnvWith(t testing.TB, cfg Config, pub Publisher, workflowFiles map[string]string, opts ...func(*Deps)) *testEnv {
	t.Helper()
	if cfg.Forges == nil {
		cfg.Forges = testForges() // as internal/app registers them
	}
	dir := t.TempDir()
	for name, content := range workflowFiles {
		writeFile(t, dir, name, content)
	}
	logger, logs := newLogger()
	set, err := workflows.NewWorkflowSet(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Workflows()) != len(workflowFiles) {
		t.Fatalf("loaded %d workflows from %d files:\n%s", len(set.Workflows()), len(workflowFiles), logs)
	}
	if cfg.DefaultForge == "" {
		cfg.DefaultForge = workflows.Forge("github") // as internal/app sets it
	}
	if cfg.PublishTimeout == 0 {
		cfg.PublishTimeout = 30 * time.Second // see openQueue
	}
	s, err := New(cfg, testDeps(pub, set, logger, opts...))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	env := &testEnv{srv: s, http: hs, logs: logs}
	if q, ok := pub.(*storestest.Queue); ok {
		env.q = q
	}
	return env
}

// testDeps are the server's dependencies on pub and src: a *storestest.Queue
// gives its stores too, as internal/app wires them; another publisher
// gives nothing more (no stored deliveries, re-runs or head store).
func testDeps(pub Publisher, src WorkflowSource, logger *slog.Logger, opts ...func(*Deps)) Deps {
	d := Deps{Publisher: pub, Workflows: src, Logger: logger}
	if q, ok := pub.(*storestest.Queue); ok {
		d.Acceptor, d.Runs, d.Deliveries, d.Heads, d.Index, d.Seen = q, q.Runs(), q.Received(), q.Heads(), q.Runs(), q
	}
	for _, o := range opts {
		o(&d)
	}
	return d
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// answer is a decoded webhook response.
type answer struct {
	Code      int
	Raw       string
	Delivery  string        `json:"delivery"`
	Runs      []runRef      `json:"runs"`
	Skipped   []decide.Skip `json:"skipped"`
	Reason    string        `json:"reason"`
	Duplicate bool          `json:"duplicate"`
	Error     string        `json:"error"`
}

func (e *testEnv) do(t testing.TB, path string, header http.Header, body io.Reader) answer {
	t.Helper()
	// Errorf, not Fatalf: load tests call this from many goroutines. A
	// failed request answers Code 0, which no test accepts.
	req, err := http.NewRequest(http.MethodPost, e.http.URL+path, body)
	if err != nil {
		t.Errorf("building request: %v", err)
		return answer{}
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", path, err)
		return answer{}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("reading answer: %v", err)
		return answer{}
	}
	a := answer{Code: resp.StatusCode, Raw: string(raw)}
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Errorf("POST %s: %d answer is not JSON: %q", path, resp.StatusCode, raw)
	}
	return a
}

// github posts a delivery signed with testGitHubSecret.
func (e *testEnv) github(t testing.TB, event, delivery string, body []byte) answer {
	t.Helper()
	h := http.Header{}
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", delivery)
	h.Set("X-Hub-Signature-256", sign(testGitHubSecret, body))
	return e.do(t, "/hooks/github", h, bytes.NewReader(body))
}

// gitlab posts a delivery with testGitLabToken.
func (e *testEnv) gitlab(t testing.TB, event string, extra http.Header, body []byte) answer {
	t.Helper()
	h := http.Header{}
	for k, v := range extra {
		h[k] = v
	}
	h.Set("X-Gitlab-Event", event)
	h.Set("X-Gitlab-Token", testGitLabToken)
	return e.do(t, "/hooks/gitlab", h, bytes.NewReader(body))
}

func (e *testEnv) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := e.http.Client().Get(e.http.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// prComment is the issue_comment fixture turned into a comment on a pull
// request (GitHub adds issue.pull_request for those) with the given text and
// commenter association.
func prComment(t testing.TB, body, association string) []byte {
	t.Helper()
	return patchJSON(t, githubFixtures+"issue_comment/created.payload.json", func(m map[string]any) {
		issue := obj(m, "issue")
		issue["pull_request"] = map[string]any{
			"url":      "https://api.github.com/repos/Codertocat/Hello-World/pulls/1",
			"html_url": "https://github.com/Codertocat/Hello-World/pull/1",
		}
		c := obj(m, "comment")
		c["body"] = body
		c["author_association"] = association
	})
}

func mustContain(t testing.TB, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not contain %q", s, sub)
	}
}

// testForge is a forge.Forge made of the lookups a test gives (a nil one
// answers forge.ErrNoCredentials, as a forge without a token does), with
// the association texts of the real providers.
type testForge struct {
	name workflows.Forge
	// Webhooks are the real provider's (hooks); nil: testForges gives
	// the default of its name.
	forge.Webhooks
	heads   workflows.HeadLookup
	files   workflows.ChangedFilesLookup
	members workflows.AssociationLookup  // GitLab's
	collab  workflows.CollaboratorLookup // Gitea's; GitHub's for a rerequest's requester (Author)
}

// testForges registers fs, and GitHub, GitLab and Gitea without
// credentials where fs has none of them, as internal/app does. A forge
// without Webhooks gets the default of its name: GitHub's and GitLab's
// enabled with testGitHubSecret and testGitLabToken, Gitea's disabled.
func testForges(fs ...testForge) *forge.Registry {
	reg := forge.NewRegistry()
	for _, f := range append([]testForge{{name: workflows.Forge("github")}, {name: workflows.Forge("gitlab")}, {name: workflows.Forge("gitea")}}, fs...) {
		if f.Webhooks == nil {
			f.Webhooks = defaultHooks(f.name)
		}
		reg.Register(f)
	}
	return reg
}

// defaultHooks are testForges' webhooks of the forge named name.
func defaultHooks(name workflows.Forge) forge.Webhooks {
	switch name {
	case workflows.Forge("github"):
		return hooks(name, true, testGitHubSecret)
	case workflows.Forge("gitlab"):
		return hooks(name, true, testGitLabToken)
	}
	return hooks(name, false)
}

// hooks are the webhooks of the real provider named name, as internal/app
// builds them: served when enabled, verified with secrets (GitLab's
// tokens).
func hooks(name workflows.Forge, enabled bool, secrets ...string) forge.Webhooks {
	var (
		f   forge.Forge
		err error
	)
	switch name {
	case workflows.Forge("github"):
		f, err = github.NewForge(github.Config{Webhook: forge.Webhook{WebhookEnabled: enabled, WebhookSecrets: secrets}})
	case workflows.Forge("gitlab"):
		f, err = gitlab.NewForge(gitlab.Config{Webhook: forge.Webhook{WebhookEnabled: enabled, WebhookSecrets: secrets}})
	case workflows.Forge("gitea"):
		f, err = gitea.NewForge(gitea.Config{BaseURL: "https://gitea.example/", Webhook: forge.Webhook{WebhookEnabled: enabled, WebhookSecrets: secrets}})
	default:
		err = fmt.Errorf("no provider %q", name)
	}
	if err != nil {
		panic(fmt.Sprintf("building the %s provider's webhooks: %v", name, err))
	}
	return f
}

// registry is testForges with the webhooks of each forge of hs (a forge
// not in hs keeps the default).
func registry(hs ...forge.Webhooks) *forge.Registry {
	fs := make([]testForge, 0, len(hs))
	for _, h := range hs {
		fs = append(fs, testForge{name: h.(forge.Forge).Name(), Webhooks: h})
	}
	return testForges(fs...)
}

func (f testForge) Name() workflows.Forge { return f.name }

func (f testForge) Credentials() error {
	if f.heads == nil && f.files == nil && f.members == nil && f.collab == nil {
		return fmt.Errorf("no %s API token: %w", f.name, forge.ErrNoCredentials)
	}
	return nil
}

func (f testForge) PullRequestHead(ctx context.Context, e *workflows.Event) (workflows.Head, error) {
	if f.heads == nil {
		return workflows.Head{}, forge.ErrNoCredentials
	}
	return f.heads.PullRequestHead(ctx, e)
}

func (f testForge) ChangedFiles(ctx context.Context, e *workflows.Event) (workflows.ChangedFiles, error) {
	if f.files == nil {
		return workflows.ChangedFiles{}, forge.ErrNoCredentials
	}
	return f.files.ChangedFiles(ctx, e)
}

func (f testForge) Association(ctx context.Context, e *workflows.Event) (string, error) {
	switch f.name {
	case workflows.Forge("gitlab"):
		switch {
		case f.members == nil:
			return "", fmt.Errorf("no gitlab API token is configured to look up the author's membership: %w", forge.ErrNoCredentials)
		case e.ProjectID <= 0 || e.AuthorID <= 0:
			return "", errors.New("the payload names no project or author id to look up the author's membership with")
		}
		a, err := f.members.AuthorAssociation(ctx, e.ProjectID, e.AuthorID)
		if err != nil {
			return "", fmt.Errorf("looking up the author's gitlab membership failed: %w", err)
		}
		return a, nil
	case workflows.Forge("gitea"):
		switch {
		case f.collab == nil:
			return "", fmt.Errorf("no gitea API token is configured to look up the author's permission: %w", forge.ErrNoCredentials)
		case e.Repo == "" || e.Author == "":
			return "", errors.New("the payload names no repository or author to look up the author's permission with")
		}
		a, err := f.collab.CollaboratorAssociation(ctx, e.Repo, e.Author)
		if err != nil {
			return "", fmt.Errorf("looking up the author's gitea permission on the repository failed: %w", err)
		}
		return a, nil
	case workflows.Forge("github"):
		switch {
		case e.Author == "":
			return "", forge.ErrAssociationInPayload
		case f.collab == nil:
			return "", fmt.Errorf("no github API credentials are configured to look up the requester's permission: %w", forge.ErrNoCredentials)
		}
		a, err := f.collab.CollaboratorAssociation(ctx, e.Repo, e.Author)
		if err != nil {
			return "", fmt.Errorf("looking up the requester's github permission on the repository failed: %w", err)
		}
		return a, nil
	}
	return "", forge.ErrAssociationInPayload
}

func (f testForge) Report(_ context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	return r.Ref, nil
}

func (f testForge) OpenDraft(context.Context, contract.DraftRequest) (workflows.ChangeRequest, error) {
	return workflows.ChangeRequest{}, forge.ErrNoCredentials
}

// GitOrigin is the public forge's for GitHub and GitLab (as their
// providers default to), none for the others.
func (f testForge) GitOrigin() (string, error) {
	switch f.name {
	case workflows.Forge("github"):
		return "https://github.com", nil
	case workflows.Forge("gitlab"):
		return "https://gitlab.com", nil
	}
	return "", forge.ErrNoCredentials
}

func (f testForge) Review(context.Context, *contract.RunReport) (*forge.ReviewSummary, error) {
	return nil, nil
}

func (f testForge) GitCredentials(context.Context, *workflows.Event) (string, string, error) {
	return "", "", nil
}

var _ forge.Forge = testForge{}

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// Payload fixtures live with their forge's normalizer (providers/<forge>/testdata).
const (
	githubFixtures = "../providers/github/testdata/github/"
	gitlabFixtures = "../providers/gitlab/testdata/gitlab/"
	giteaFixtures  = "../providers/gitea/testdata/gitea/"
)

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// patchJSON decodes a fixture, applies edit to it and encodes it again.
func patchJSON(t testing.TB, path string, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFile(t, path), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func obj(m map[string]any, key string) map[string]any { return m[key].(map[string]any) }
