package ui

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/stores/storestest"
	"github.com/hookrun/hookrun/workflows"
)

const testToken = "ui-test-token-s3cret"

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// storeCanceller cancels through the run record, as `hookrun ingress` does.
type storeCanceller struct{ runs *stores.RunStore }

func (c storeCanceller) Cancel(ctx context.Context, id string) error {
	_, err := c.runs.RequestCancel(ctx, id)
	return err
}

// fakeRerunner records the runs it was asked to re-run.
type fakeRerunner struct {
	mu    sync.Mutex
	calls []string
	next  string
}

func (f *fakeRerunner) Rerun(_ context.Context, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, id)
	return f.next, nil
}

type env struct {
	t     *testing.T
	q     *storestest.Queue
	http  *httptest.Server
	clock *testClock
	logs  *logBuffer
}

type envOpts struct {
	rerun    Rerunner
	pageSize int
	tls      bool
	// deliveries wires the deliveries pages to the ingress server.
	deliveries bool
	// trustedProxies is ingress.Config.TrustedProxies.
	trustedProxies []string
	// workflows is Deps.Workflows.
	workflows WorkflowSource
}

// logBuffer collects the server's log lines (debug included).
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
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

// newEnv serves the UI on a real ingress server over a real embedded
// NATS server.
func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := queue.Open(ctx, queue.Config{RequestKey: []byte("test-request-key-0123456789abcdef-0123"), DataDir: t.TempDir(), PublishTimeout: 30 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("opening queue: %v", err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	q := storestest.With(t, raw)
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gh, err := github.NewForge(github.Config{Webhook: forge.Webhook{WebhookEnabled: true, WebhookSecrets: []string{"s"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ingress.New(ingress.Config{Forges: forge.NewRegistry(gh), DefaultForge: github.Name,
		TrustedProxies: o.trustedProxies}, ingress.Deps{Publisher: q, Workflows: staticSource{}, Acceptor: q, Runs: q.Runs(),
		Deliveries: q.Received(), Heads: q.Heads(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterAPI(ingress.APIConfig{Token: testToken}, q.Runs(), q.Logs(), storeCanceller{q.Runs()})
	store, err := q.Sessions(ctx, DefaultSessionTTL)
	if err != nil {
		t.Fatal(err)
	}
	clk := &testClock{t: time.Now()}
	deps := Deps{
		Runs: q.Runs(), Logs: q.Logs(), Stream: ingress.NewLogStream(q.Runs(), q.Logs(), 50*time.Millisecond),
		Cancel: storeCanceller{q.Runs()}, Rerun: o.rerun, Sessions: store, Workflows: o.workflows, Logger: logger,
	}
	if o.deliveries {
		deps.Deliveries = srv
	}
	err = Register(srv, Config{Token: testToken, Now: clk.Now, PageSize: o.pageSize}, deps)
	if err != nil {
		t.Fatal(err)
	}
	var hs *httptest.Server
	if o.tls {
		hs = httptest.NewTLSServer(srv.Handler())
	} else {
		hs = httptest.NewServer(srv.Handler())
	}
	t.Cleanup(hs.Close)
	return &env{t: t, q: q, http: hs, clock: clk, logs: logs}
}

type staticSource struct{}

func (staticSource) Workflows() []*workflows.Workflow { return nil }

// client is a browser: a cookie jar, redirects not followed.
func (e *env) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if e.http.TLS != nil {
		c.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the test server's own certificate
	}
	return c
}

type answer struct {
	code   int
	body   string
	header http.Header
}

func (e *env) do(c *http.Client, method, path string, form url.Values) answer {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, e.http.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

// login logs c in through the form and returns the CSRF token of the
// session, as the pages carry it.
func (e *env) login(c *http.Client) string {
	e.t.Helper()
	a := e.do(c, http.MethodPost, "/login", url.Values{"token": {testToken}, "next": {"/"}})
	if a.code != http.StatusSeeOther || a.header.Get("Location") != "/" {
		e.t.Fatalf("login: %d %s %s", a.code, a.header.Get("Location"), a.body)
	}
	page := e.do(c, http.MethodGet, "/", nil)
	if page.code != http.StatusOK {
		e.t.Fatalf("runs after login: %d %s", page.code, page.body)
	}
	return csrfOf(e.t, page.body)
}

var reCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := reCSRF.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}

// putRecord stores a run record as the runner would have left it.
func (e *env) putRecord(rec *stores.RunRecord) *stores.RunRecord {
	e.t.Helper()
	if rec.ID == "" {
		rec.ID = queue.NewRunID()
	}
	if rec.Attempt == 0 {
		rec.Attempt = 1
	}
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = time.Now().UTC()
	}
	if rec.Repo == "" {
		rec.Repo = rec.Event.Repo
	}
	if _, err := e.q.Runs().Create(context.Background(), rec); err != nil {
		e.t.Fatal(err)
	}
	return rec
}

func sessionCookie(c *http.Client, u string) *http.Cookie {
	pu, _ := url.Parse(u)
	for _, ck := range c.Jar.Cookies(pu) {
		if ck.Name == cookieName {
			return ck
		}
	}
	return nil
}
