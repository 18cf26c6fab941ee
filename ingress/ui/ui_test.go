package ui

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// TestLoginRequired: without a session every page redirects to /login with
// the page asked for as next (a path, no token), and what scripts fetch or
// forms post is answered 401.
func TestLoginRequired(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client()
	rec := e.putRecord(&stores.RunRecord{Workflow: "w", Status: workflows.StatusQueued, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r"}})
	for path, want := range map[string]string{
		"/":                   "/login?next=%2F",
		"/?workflow=w":        "/login?next=%2F%3Fworkflow%3Dw",
		"/runs/" + rec.ID:     "/login?next=%2Fruns%2F" + rec.ID,
		"/runs/does-not-here": "/login?next=%2Fruns%2Fdoes-not-here",
	} {
		a := e.do(c, http.MethodGet, path, nil)
		if a.code != http.StatusSeeOther || a.header.Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want 303 to %q", path, a.code, a.header.Get("Location"), want)
		}
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/runs/" + rec.ID + "/logs/stream"},
		{http.MethodGet, "/runs/" + rec.ID + "/summary"},
		{http.MethodPost, "/runs/" + rec.ID + "/cancel"},
		{http.MethodPost, "/runs/" + rec.ID + "/rerun"},
		{http.MethodPost, "/logout"},
	} {
		if a := e.do(c, r.method, r.path, url.Values{}); a.code != http.StatusUnauthorized {
			t.Errorf("%s %s without a session: %d, want 401", r.method, r.path, a.code)
		}
	}
	got, _, _ := e.q.Runs().Get(context.Background(), rec.ID)
	if got.Status != workflows.StatusQueued || got.CancelRequested {
		t.Errorf("a cancel without a session changed the run: %+v", got)
	}
	// The form itself is public, escapes next, and sends the security headers.
	a := e.do(c, http.MethodGet, "/login?next=/runs/x%22%3E%3Cb%3E", nil)
	if a.code != http.StatusOK || !strings.Contains(a.body, `name="token"`) || strings.Contains(a.body, `x"><b>`) {
		t.Errorf("login form: %d\n%s", a.code, a.body)
	}
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

// TestLoginBadToken: a wrong token is refused with 401, no cookie and the
// form again, without echoing what was typed; a wrong cookie is no session.
func TestLoginBadToken(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client()
	for _, tok := range []string{"", "wrong", testToken + "x", testToken[:len(testToken)-1]} {
		a := e.do(c, http.MethodPost, "/login", url.Values{"token": {tok}, "next": {"/"}})
		if a.code != http.StatusUnauthorized || a.header.Get("Set-Cookie") != "" || !strings.Contains(a.body, "That is not the API token.") {
			t.Errorf("token %q: %d, Set-Cookie %q\n%s", tok, a.code, a.header.Get("Set-Cookie"), a.body)
		}
		if tok != "" && strings.Contains(a.body, tok) {
			t.Errorf("the refused token %q is echoed in the page", tok)
		}
	}
	// The token itself as the cookie is no session either.
	req, _ := http.NewRequest(http.MethodGet, e.http.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: testToken})
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the token as cookie: %d, want a redirect to /login", resp.StatusCode)
	}
}

// TestSessionCookie: the right token sets an HttpOnly, SameSite=Strict,
// Path=/ cookie that is not the token and does not contain it, and sends
// the browser to next (only a local path); the cookie stops working when
// tampered with, past its expiry, after logout's deletion, and on a server
// with another token; over TLS it is Secure.
func TestSessionCookie(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client()
	a := e.do(c, http.MethodPost, "/login", url.Values{"token": {testToken}, "next": {"/runs/abc?x=1"}})
	if a.code != http.StatusSeeOther || a.header.Get("Location") != "/runs/abc?x=1" {
		t.Fatalf("login: %d to %q", a.code, a.header.Get("Location"))
	}
	raw := a.header.Get("Set-Cookie")
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/", "Expires="} {
		if !strings.Contains(raw, attr) {
			t.Errorf("Set-Cookie %q lacks %s", raw, attr)
		}
	}
	if strings.Contains(raw, "Secure") {
		t.Errorf("Set-Cookie %q is Secure over plain HTTP", raw)
	}
	ck := sessionCookie(c, e.http.URL)
	if ck == nil || ck.Value == testToken || strings.Contains(ck.Value, testToken) {
		t.Fatalf("session cookie %+v: is or holds the token", ck)
	}
	if a := e.do(c, http.MethodGet, "/", nil); a.code != http.StatusOK {
		t.Fatalf("runs with the session: %d", a.code)
	}

	// Open redirects: next is a local path or "/".
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", "runs"} {
		a := e.do(e.client(), http.MethodPost, "/login", url.Values{"token": {testToken}, "next": {next}})
		if a.header.Get("Location") != "/" {
			t.Errorf("next %q: redirected to %q, want /", next, a.header.Get("Location"))
		}
	}

	// Tampering: a later expiry with the old MAC.
	parts := strings.Split(ck.Value, ".")
	forged := "9999999999." + parts[1] + "." + parts[2]
	req, _ := http.NewRequest(http.MethodGet, e.http.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: forged})
	if resp, err := e.client().Do(req); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Errorf("forged expiry accepted: %v %v", resp, err)
	}
	// Another server's token does not open this one.
	// (its session id even stored in this server's bucket)
	store, err := e.q.Sessions(context.Background(), DefaultSessionTTL)
	if err != nil {
		t.Fatal(err)
	}
	other := newSessions("another-token", time.Hour, time.Now, store)
	v, _, err := other.issue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest(http.MethodGet, e.http.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: v})
	if resp, err := e.client().Do(req); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a session of another token accepted: %v %v", resp, err)
	}

	// Logout deletes the cookie.
	csrf := csrfOf(t, e.do(c, http.MethodGet, "/", nil).body)
	a = e.do(c, http.MethodPost, "/logout", url.Values{"csrf": {csrf}})
	if a.code != http.StatusSeeOther || !strings.Contains(a.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout: %d, Set-Cookie %q", a.code, a.header.Get("Set-Cookie"))
	}
	if a := e.do(c, http.MethodGet, "/", nil); a.code != http.StatusSeeOther {
		t.Errorf("runs after logout: %d, want a redirect", a.code)
	}

	// Expiry.
	c2 := e.client()
	e.login(c2)
	e.clock.Add(DefaultSessionTTL + time.Second)
	if a := e.do(c2, http.MethodGet, "/", nil); a.code != http.StatusSeeOther {
		t.Errorf("runs after the session expired: %d, want a redirect", a.code)
	}

	// TLS: Secure.
	s := newEnv(t, envOpts{tls: true})
	a = s.do(s.client(), http.MethodPost, "/login", url.Values{"token": {testToken}})
	if !strings.Contains(a.header.Get("Set-Cookie"), "Secure") {
		t.Errorf("Set-Cookie over TLS %q is not Secure", a.header.Get("Set-Cookie"))
	}
}

// TestCSRF: cancel, re-run and logout posts without the session's form
// token, or with another session's, are refused 403 and do nothing; the
// page's own token cancels a real queued run (published to JetStream).
func TestCSRF(t *testing.T) {
	rr := &fakeRerunner{next: queue.NewRunID()}
	e := newEnv(t, envOpts{rerun: rr})
	ctx := context.Background()
	req := &queue.RunRequest{ID: queue.NewRunID(), Workflow: "w", Attempt: 1, CreatedAt: time.Now().UTC(),
		Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r", DeliveryID: "d-1"}}
	if _, err := e.q.Publish(ctx, req); err != nil {
		t.Fatal(err)
	}
	done := e.putRecord(&stores.RunRecord{Workflow: "w", Status: workflows.StatusFailed, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r"}})
	c, other := e.client(), e.client()
	csrf := e.login(c)
	otherCSRF := e.login(other)
	if csrf == otherCSRF {
		t.Fatal("two sessions share a CSRF token")
	}
	for _, tok := range []string{"", "x", otherCSRF, testToken} {
		for _, path := range []string{"/runs/" + req.ID + "/cancel", "/runs/" + done.ID + "/rerun", "/logout"} {
			if a := e.do(c, http.MethodPost, path, url.Values{"csrf": {tok}}); a.code != http.StatusForbidden {
				t.Errorf("POST %s with csrf %q: %d, want 403", path, tok, a.code)
			}
		}
	}
	if rec, _, _ := e.q.Runs().Get(ctx, req.ID); rec.Status != workflows.StatusQueued || rec.CancelRequested {
		t.Fatalf("a refused post changed the run: %+v", rec)
	}
	if len(rr.calls) != 0 {
		t.Fatalf("a refused post re-ran: %v", rr.calls)
	}
	if a := e.do(c, http.MethodGet, "/", nil); a.code != http.StatusOK {
		t.Fatalf("a refused logout ended the session: %d", a.code)
	}

	// The run page's own form cancels it.
	page := e.do(c, http.MethodGet, "/runs/"+req.ID, nil)
	if !strings.Contains(page.body, `action="/runs/`+req.ID+`/cancel"`) {
		t.Fatalf("no cancel form on a queued run's page:\n%s", page.body)
	}
	a := e.do(c, http.MethodPost, "/runs/"+req.ID+"/cancel", url.Values{"csrf": {csrfOf(t, page.body)}})
	if a.code != http.StatusSeeOther || a.header.Get("Location") != "/runs/"+req.ID {
		t.Fatalf("cancel: %d %q %s", a.code, a.header.Get("Location"), a.body)
	}
	rec, _, err := e.q.Runs().Get(ctx, req.ID)
	if err != nil || rec.Status != workflows.StatusCancelled || !rec.CancelRequested {
		t.Fatalf("after cancel: %+v %v", rec, err)
	}
	page = e.do(c, http.MethodGet, "/runs/"+req.ID, nil)
	if strings.Contains(page.body, `id="cancel"`) || !strings.Contains(page.body, `data-status="cancelled"`) {
		t.Errorf("a cancelled run's page still offers cancel or hides its status:\n%s", page.body)
	}
	// Cancelling it again is a conflict, shown as such.
	if a := e.do(c, http.MethodPost, "/runs/"+req.ID+"/cancel", url.Values{"csrf": {csrf}}); a.code != http.StatusConflict {
		t.Errorf("second cancel: %d, want 409", a.code)
	}
}

// TestRerunButton: a finished run's page offers re-run when a Rerunner is
// wired; the post calls it with the run's id and sends the browser to the
// new run. Without one, no button and the post is 404.
func TestRerunButton(t *testing.T) {
	rr := &fakeRerunner{next: queue.NewRunID()}
	e := newEnv(t, envOpts{rerun: rr})
	c := e.client()
	e.login(c)
	running := e.putRecord(&stores.RunRecord{Workflow: "w", Status: workflows.StatusRunning, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r"}})
	done := e.putRecord(&stores.RunRecord{Workflow: "w", Status: workflows.StatusSucceeded, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r"}})
	if p := e.do(c, http.MethodGet, "/runs/"+running.ID, nil); strings.Contains(p.body, `id="rerun"`) {
		t.Errorf("a running run offers re-run")
	}
	page := e.do(c, http.MethodGet, "/runs/"+done.ID, nil)
	if !strings.Contains(page.body, `action="/runs/`+done.ID+`/rerun"`) {
		t.Fatalf("no re-run form:\n%s", page.body)
	}
	a := e.do(c, http.MethodPost, "/runs/"+done.ID+"/rerun", url.Values{"csrf": {csrfOf(t, page.body)}})
	if a.code != http.StatusSeeOther || a.header.Get("Location") != "/runs/"+rr.next {
		t.Fatalf("re-run: %d %q %s", a.code, a.header.Get("Location"), a.body)
	}
	if len(rr.calls) != 1 || rr.calls[0] != done.ID {
		t.Fatalf("Rerun calls %v, want [%s]", rr.calls, done.ID)
	}

	plain := newEnv(t, envOpts{})
	pc := plain.client()
	csrf := plain.login(pc)
	d2 := plain.putRecord(&stores.RunRecord{Workflow: "w", Status: workflows.StatusSucceeded, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r"}})
	if p := plain.do(pc, http.MethodGet, "/runs/"+d2.ID, nil); strings.Contains(p.body, "rerun") {
		t.Errorf("re-run offered without a Rerunner")
	}
	if a := plain.do(pc, http.MethodPost, "/runs/"+d2.ID+"/rerun", url.Values{"csrf": {csrf}}); a.code != http.StatusNotFound {
		t.Errorf("re-run without a Rerunner: %d, want 404", a.code)
	}
}

// TestHostileTextEscaped: a pull request title, branch names, sender, step
// error and log lines full of markup reach the pages escaped, never as
// markup.
func TestHostileTextEscaped(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client()
	e.login(c)
	const title = `<script>alert("title")</script>`
	const branch = `"><img src=x onerror=alert(1)>`
	const logText = `</pre><script>alert("log")</script>`
	now := time.Now().UTC()
	rec := e.putRecord(&stores.RunRecord{Workflow: "w", Status: workflows.StatusFailed, StartedAt: &now, FinishedAt: &now,
		Error: "<b>boom</b>",
		Event: workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindPullRequest, Action: "opened", Repo: "o/r", Sender: "<i>mallory</i>",
			CloneURL:    "javascript:alert(1)//.git",
			PullRequest: &workflows.PullRequest{Number: 7, Title: title, HeadRef: branch, BaseRef: "main", URL: "javascript:alert(2)"}},
		Steps: []workflows.StepState{{ID: "s", Status: workflows.StatusFailed, StartedAt: &now, FinishedAt: &now, Error: `<img src=y onerror=alert(3)>`}}})
	if err := e.q.Logs().Append(context.Background(), stores.LogLine{RunID: rec.ID, StepID: "s", Stream: stores.StreamStdout, Text: logText, Time: now}); err != nil {
		t.Fatal(err)
	}
	if err := e.q.Logs().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/runs/" + rec.ID, "/runs/" + rec.ID + "/summary"} {
		a := e.do(c, http.MethodGet, path, nil)
		if a.code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, a.code)
		}
		for _, raw := range []string{title, branch, logText, "<b>boom</b>", "<i>mallory</i>", "onerror=alert(3)>", "javascript:"} {
			if strings.Contains(a.body, raw) {
				t.Errorf("GET %s: %q appears unescaped", path, raw)
			}
		}
		if !strings.Contains(a.body, "&lt;script&gt;alert(&#34;title&#34;)&lt;/script&gt;") {
			t.Errorf("GET %s: the title is not shown escaped:\n%s", path, a.body)
		}
	}
	page := e.do(c, http.MethodGet, "/runs/"+rec.ID, nil).body
	for _, esc := range []string{"&#34;&gt;&lt;img src=x onerror=alert(1)&gt;", "&lt;/pre&gt;&lt;script&gt;alert(&#34;log&#34;)&lt;/script&gt;"} {
		if !strings.Contains(page, esc) {
			t.Errorf("run page lacks %q", esc)
		}
	}
}

// TestRunsListFilters: newest first, each filter narrows the list, the PR
// filter takes a number, and pages of PageSize follow each other through
// the cursor without gaps or repeats.
func TestRunsListFilters(t *testing.T) {
	e := newEnv(t, envOpts{pageSize: 2})
	c := e.client()
	e.login(c)
	pr := func(n int) *workflows.PullRequest { return &workflows.PullRequest{Number: n, Title: "t"} }
	var ids []string
	for _, r := range []*stores.RunRecord{
		{Workflow: "review", Status: workflows.StatusSucceeded, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/a", PullRequest: pr(1)}},
		{Workflow: "review", Status: workflows.StatusFailed, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/b", PullRequest: pr(2)}},
		{Workflow: "deploy", Status: workflows.StatusSucceeded, Event: workflows.Event{Forge: workflows.Forge("gitlab"), Repo: "g/a", PullRequest: pr(2)}},
		{Workflow: "review", Status: workflows.StatusRunning, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/a", PullRequest: pr(1)}},
		{Workflow: "triage", Status: workflows.StatusQueued, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/a", Issue: &workflows.Issue{Number: 9}}},
	} {
		ids = append(ids, e.putRecord(r).ID)
		time.Sleep(2 * time.Millisecond) // distinct ULID milliseconds: a defined order
	}
	shown := func(body string) []string {
		var out []string
		for _, id := range ids {
			if i := strings.Index(body, `href="/runs/`+id+`"`); i >= 0 {
				out = append(out, id)
			}
		}
		// in page order
		for i := 0; i < len(out); i++ {
			for j := i + 1; j < len(out); j++ {
				if strings.Index(body, out[j]) < strings.Index(body, out[i]) {
					out[i], out[j] = out[j], out[i]
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []int // indexes into ids, page order
	}{
		{"workflow=review", []int{3, 1}},
		{"repo=o/a&workflow=review", []int{3, 0}},
		{"status=succeeded", []int{2, 0}},
		{"pr=2", []int{2, 1}},
		{"pr=%231&status=running", []int{3}},
		{"pr=9", []int{4}},
		{"workflow=nope", nil},
	} {
		a := e.do(c, http.MethodGet, "/?"+tc.query, nil)
		var want []string
		for _, i := range tc.want {
			want = append(want, ids[i])
		}
		if got := shown(a.body); a.code != http.StatusOK || strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("?%s: %d, runs %v, want %v", tc.query, a.code, got, want)
		}
	}
	if a := e.do(c, http.MethodGet, "/?pr=abc", nil); a.code != http.StatusBadRequest || !strings.Contains(a.body, "takes a number") {
		t.Errorf("?pr=abc: %d", a.code)
	}
	// Paging through all five, two at a time.
	var seen []string
	next := "/"
	for range 5 {
		a := e.do(c, http.MethodGet, next, nil)
		seen = append(seen, shown(a.body)...)
		i := strings.Index(a.body, `id="next-page"`)
		if i < 0 {
			next = ""
			break
		}
		h := a.body[strings.LastIndex(a.body[:i], `href="`)+6:]
		next = strings.ReplaceAll(h[:strings.Index(h, `"`)], "&amp;", "&")
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if next != "" || strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("paged through %v (next %q), want %v", seen, next, want)
	}
}

// TestStreamRoute: the cookie-authenticated stream is the API's: the
// stored lines as `event: log`, then `event: end` with the status.
func TestStreamRoute(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client()
	e.login(c)
	now := time.Now().UTC()
	rec := e.putRecord(&stores.RunRecord{Workflow: "w", Status: workflows.StatusSucceeded, FinishedAt: &now, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r"}})
	for _, text := range []string{"one", "two"} {
		if err := e.q.Logs().Append(context.Background(), stores.LogLine{RunID: rec.ID, StepID: "s", Stream: stores.StreamStdout, Text: text, Time: now}); err != nil {
			t.Fatal(err)
		}
	}
	_ = e.q.Logs().Flush(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.http.URL+"/runs/"+rec.ID+"/logs/stream", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "data: ") {
			events = append(events, l)
		}
		if strings.HasPrefix(sc.Text(), "data: {\"status\"") {
			break
		}
	}
	got := strings.Join(events, "\n")
	if len(events) != 3 || !strings.Contains(events[0], `"text":"one"`) || !strings.Contains(events[1], `"text":"two"`) ||
		events[2] != `data: {"status":"succeeded"}` {
		t.Errorf("stream events:\n%s", got)
	}
	if a := e.do(c, http.MethodGet, "/runs/NOPE/logs/stream", nil); a.code != http.StatusNotFound {
		t.Errorf("stream of an unknown run: %d", a.code)
	}
}
