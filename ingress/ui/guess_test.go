package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// loginFrom posts the login form with token, from the test server's
// loopback peer, with extra headers (X-Forwarded-For).
func (e *env) loginFrom(c *http.Client, token string, header http.Header) answer {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.http.URL+"/login", strings.NewReader(url.Values{"token": {token}, "next": {"/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

func xff(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }

// wantLimited checks a 429 with a Retry-After between 1 and 60 seconds.
func wantLimited(t *testing.T, what string, a answer) {
	t.Helper()
	ra, err := strconv.Atoi(a.header.Get("Retry-After"))
	if a.code != http.StatusTooManyRequests || err != nil || ra < 1 || ra > 60 {
		t.Fatalf("%s: %d, Retry-After %q, want 429 with 1..60 s\n%s", what, a.code, a.header.Get("Retry-After"), a.body)
	}
}

// TestLoginRateLimited: ten wrong tokens from one address are answered 401;
// the 11th within the minute is 429 with Retry-After, and so is the right
// token then (else the 429 would not stop guessing); the refusal is logged
// with the address and without the token. Rotating X-Forwarded-For from a
// peer that is not a trusted proxy changes nothing, the logs name the peer,
// and the bearer API shares the same budget.
func TestLoginRateLimited(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := e.client()
	for i := range 10 {
		a := e.loginFrom(c, fmt.Sprintf("guess-%d", i), xff(fmt.Sprintf("203.0.113.%d", i)))
		if a.code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, a.code)
		}
	}
	a := e.loginFrom(c, "guess-10", xff("198.51.100.7"))
	wantLimited(t, "11th wrong token", a)
	if !strings.Contains(a.body, "Too many wrong tokens") || strings.Contains(a.body, "guess-10") {
		t.Errorf("429 page does not say why, or echoes the token:\n%s", a.body)
	}
	wantLimited(t, "the right token while limited", e.loginFrom(c, testToken, xff("198.51.100.8")))
	if sessionCookie(c, e.http.URL) != nil {
		t.Error("a limited login set a session cookie")
	}
	// The bearer API: same address, same budget.
	req, _ := http.NewRequest(http.MethodGet, e.http.URL+"/api/v1/runs", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("X-Forwarded-For", "192.0.2.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("API from the limited address: %d Retry-After %q, want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	logs := e.logs.String()
	if !strings.Contains(logs, "too many wrong tokens") || !strings.Contains(logs, "remote=127.0.0.1") {
		t.Errorf("the refusal is not logged with the peer's address:\n%s", logs)
	}
	for _, bad := range []string{"203.0.113.", "198.51.100.", "192.0.2.1", "guess-", testToken} {
		if strings.Contains(logs, bad) {
			t.Errorf("the log holds %q (a forged X-Forwarded-For or a token):\n%s", bad, logs)
		}
	}
}

// TestLoginRateLimitTrustedProxy: behind a trusted proxy (the loopback
// peer listed in trusted proxies) the client is X-Forwarded-For's, so one
// client's guesses do not lock out another, and the logs name the client.
func TestLoginRateLimitTrustedProxy(t *testing.T) {
	e := newEnv(t, envOpts{trustedProxies: []string{"127.0.0.0/8", "::1"}})
	c := e.client()
	for i := range 10 {
		if a := e.loginFrom(c, "guess", xff("203.0.113.9")); a.code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i+1, a.code)
		}
	}
	wantLimited(t, "11th wrong token of 203.0.113.9", e.loginFrom(c, "guess", xff("203.0.113.9")))
	// A client that spoofs XFF itself: the proxy appends the real client
	// on the right, which is the one that counts.
	wantLimited(t, "spoofed left entry", e.loginFrom(c, "guess", xff("198.51.100.1, 203.0.113.9")))
	if a := e.loginFrom(c, testToken, xff("198.51.100.2")); a.code != http.StatusSeeOther {
		t.Errorf("another client behind the proxy: %d, want 303", a.code)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "remote=203.0.113.9") || !strings.Contains(logs, "remote=198.51.100.2") {
		t.Errorf("the logs do not name the clients behind the proxy:\n%s", logs)
	}
}

// TestLogoutEndsSession: after log-out, a copy of the cookie taken before
// it is refused (redirect to /login, 401 for the summary), and so is its
// CSRF token; another session goes on.
func TestLogoutEndsSession(t *testing.T) {
	e := newEnv(t, envOpts{})
	c, other := e.client(), e.client()
	csrf := e.login(c)
	e.login(other)
	stolen := sessionCookie(c, e.http.URL)
	if a := e.do(c, http.MethodPost, "/logout", url.Values{"csrf": {csrf}}); a.code != http.StatusSeeOther {
		t.Fatalf("logout: %d", a.code)
	}
	replay := e.client()
	u, _ := url.Parse(e.http.URL)
	replay.Jar.SetCookies(u, []*http.Cookie{{Name: cookieName, Value: stolen.Value}})
	if a := e.do(replay, http.MethodGet, "/", nil); a.code != http.StatusSeeOther || !strings.HasPrefix(a.header.Get("Location"), "/login") {
		t.Errorf("the cookie from before log-out: %d to %q, want a redirect to /login", a.code, a.header.Get("Location"))
	}
	if a := e.do(replay, http.MethodGet, "/runs/x/summary", nil); a.code != http.StatusUnauthorized {
		t.Errorf("the cookie from before log-out on the summary: %d, want 401", a.code)
	}
	if a := e.do(replay, http.MethodPost, "/logout", url.Values{"csrf": {csrf}}); a.code != http.StatusUnauthorized {
		t.Errorf("the old cookie and CSRF token on a post: %d, want 401", a.code)
	}
	if a := e.do(other, http.MethodGet, "/", nil); a.code != http.StatusOK {
		t.Errorf("another session after log-out: %d, want 200", a.code)
	}
}

// TestRevokeAllSessions: POST /api/v1/sessions/revoke with the API token
// ends both open sessions; the token still logs in; without the token it
// is 401.
func TestRevokeAllSessions(t *testing.T) {
	e := newEnv(t, envOpts{})
	a, b := e.client(), e.client()
	e.login(a)
	e.login(b)
	post := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.http.URL+"/api/v1/sessions/revoke", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := post(""); code != http.StatusUnauthorized {
		t.Fatalf("revoke without the token: %d, want 401", code)
	}
	if x := e.do(a, http.MethodGet, "/", nil); x.code != http.StatusOK {
		t.Fatalf("a refused revoke ended a session: %d", x.code)
	}
	code, body := post(testToken)
	var ans struct{ Revoked int }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &ans) != nil || ans.Revoked != 2 {
		t.Fatalf("revoke: %d %s, want 200 revoked 2", code, body)
	}
	for name, c := range map[string]*http.Client{"a": a, "b": b} {
		if x := e.do(c, http.MethodGet, "/", nil); x.code != http.StatusSeeOther {
			t.Errorf("session %s after revoke: %d, want a redirect to /login", name, x.code)
		}
	}
	e.login(e.client()) // the token is unchanged
}

// TestLocalPath: next= is kept only when a browser resolves it on this
// origin, after removing TAB, CR and LF as browsers do.
func TestLocalPath(t *testing.T) {
	for next, want := range map[string]string{
		"/":                     "/",
		"/runs/abc?x=1":         "/runs/abc?x=1",
		"/runs/a%2F%2Fb":        "/runs/a%2F%2Fb",
		"/?workflow=w#top":      "/?workflow=w#top",
		"/ru\tns/\nabc":         "/runs/abc",
		"/\t/evil.example/x":    "/", // /%09/evil.example/x decoded
		"/\r\n/evil.example":    "/",
		"\t//evil.example":      "/",
		"/\t\\evil.example":     "/",
		"//evil.example/":       "/",
		"/\\evil.example":       "/",
		"/x\\..\\\\evil":        "/",
		"https://evil.example/": "/",
		"javascript:alert(1)":   "/",
		"JAVASCRIPT:alert(1)":   "/",
		"data:text/html,x":      "/",
		" /x":                   "/",
		" //evil.example":       "/",
		"\x00/x":                "/",
		"runs":                  "/",
		"":                      "/",
		"\t":                    "/",
	} {
		if got := localPath(next); got != want {
			t.Errorf("localPath(%q) = %q, want %q", next, got, want)
		}
	}
	// Through the login form, with the query as a browser sends it.
	e := newEnv(t, envOpts{})
	page := e.do(e.client(), http.MethodGet, "/login?next=/%09/evil.example/x", nil)
	if strings.Contains(page.body, "evil.example") {
		t.Errorf("the login form carries the hostile next:\n%s", page.body)
	}
	a := e.do(e.client(), http.MethodPost, "/login", url.Values{"token": {testToken}, "next": {"/\t/evil.example/x"}})
	if a.code != http.StatusSeeOther || a.header.Get("Location") != "/" {
		t.Errorf("login with next=/%%09/evil.example/x: %d to %q, want /", a.code, a.header.Get("Location"))
	}
}
