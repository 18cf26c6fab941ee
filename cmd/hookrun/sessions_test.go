package main

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// checkRevokeAll logs two browsers in to the UI at base through the form,
// runs `hookrun sessions revoke --all` (the token from tokenFile) and
// checks that both sessions are over while the token still logs in.
func checkRevokeAll(t *testing.T, base, token, tokenFile string) {
	t.Helper()
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	status := func(c *http.Client, method, path string, form url.Values) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	a, b := browser(), browser()
	for _, c := range []*http.Client{a, b} {
		if code := status(c, http.MethodPost, "/login", url.Values{"token": {token}, "next": {"/"}}); code != http.StatusSeeOther {
			t.Fatalf("login: %d", code)
		}
		if code := status(c, http.MethodGet, "/", nil); code != http.StatusOK {
			t.Fatalf("runs page after login: %d", code)
		}
	}
	if code, _, errs := runCLI(t, "sessions", "revoke"); code != exitUsage || !strings.Contains(errs, "want --all") {
		t.Errorf("sessions revoke without --all: %d %q", code, errs)
	}
	code, out, errs := runCLIWithin(t, 10*time.Second, "sessions", "revoke", "--all", "--token-file", tokenFile, "--server", base)
	if code != 0 || !strings.Contains(out, "revoked 2 session(s)") {
		t.Fatalf("sessions revoke --all: %d %q %q", code, out, errs)
	}
	for _, c := range []*http.Client{a, b} {
		if code := status(c, http.MethodGet, "/", nil); code != http.StatusSeeOther {
			t.Errorf("a session after revoke --all: %d, want a redirect to /login", code)
		}
	}
	if code := status(browser(), http.MethodPost, "/login", url.Values{"token": {token}, "next": {"/"}}); code != http.StatusSeeOther {
		t.Errorf("the token after revoke --all: %d, want it to log in still", code)
	}
}
