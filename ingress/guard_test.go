package ingress

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

func apiDoFrom(t *testing.T, env *testEnv, token, forwarded string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.http.URL+"/api/v1/runs", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if forwarded != "" {
		req.Header.Set("X-Forwarded-For", forwarded)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestAPIAuthRateLimited: ten wrong bearer tokens from one address are
// 401; the 11th within the minute is 429 with Retry-After, the right token
// too while limited, and the refusal is logged with the peer's address and
// no token. Rotating X-Forwarded-For from an untrusted peer evades nothing.
func TestAPIAuthRateLimited(t *testing.T) {
	env := apiEnv(t)
	for i := range 10 {
		if r := apiDoFrom(t, env, fmt.Sprintf("guess-%d", i), fmt.Sprintf("203.0.113.%d", i)); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, r.StatusCode)
		}
	}
	for _, tok := range []string{"guess-10", testAPIToken} {
		r := apiDoFrom(t, env, tok, "198.51.100.1")
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if r.StatusCode != http.StatusTooManyRequests || err != nil || ra < 1 || ra > 60 {
			t.Errorf("token %q after 10 failures: %d Retry-After %q, want 429 with 1..60", tok, r.StatusCode, r.Header.Get("Retry-After"))
		}
	}
	logs := env.logs.String()
	if !strings.Contains(logs, "too many wrong tokens") || !strings.Contains(logs, "remote=127.0.0.1") {
		t.Errorf("the refusal is not logged with the peer's address:\n%s", logs)
	}
	for _, bad := range []string{"203.0.113.", "198.51.100.", "guess-", testAPIToken} {
		if strings.Contains(logs, bad) {
			t.Errorf("the log holds %q:\n%s", bad, logs)
		}
	}
}

// TestAPIAuthTrustedProxy: behind a trusted proxy the client is
// X-Forwarded-For's right-most untrusted entry: one client's guesses limit
// that client only, whatever it puts on the left.
func TestAPIAuthTrustedProxy(t *testing.T) {
	env := newEnv(t, Config{TrustedProxies: []string{"127.0.0.1"}}, map[string]string{"pr.yaml": prWorkflow})
	env.srv.RegisterAPI(APIConfig{Token: testAPIToken}, env.q.Runs(), env.q.Logs(), storeCanceller{env.q.Runs()})
	for i := range 10 {
		if r := apiDoFrom(t, env, "guess", fmt.Sprintf("10.9.9.%d, 203.0.113.5", i)); r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i+1, r.StatusCode)
		}
	}
	if r := apiDoFrom(t, env, "guess", "203.0.113.5"); r.StatusCode != http.StatusTooManyRequests {
		t.Errorf("11th wrong token of 203.0.113.5: %d, want 429", r.StatusCode)
	}
	if r := apiDoFrom(t, env, testAPIToken, "203.0.113.6"); r.StatusCode != http.StatusOK {
		t.Errorf("another client behind the proxy: %d, want 200", r.StatusCode)
	}
	if r := apiDoFrom(t, env, testAPIToken, ""); r.StatusCode != http.StatusOK {
		t.Errorf("the proxy itself: %d, want 200", r.StatusCode)
	}
}

// TestClientAddress: what c.RealIP() answers for each peer and header.
func TestClientAddress(t *testing.T) {
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", "fd00::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		trusted bool
		peer    string
		xff     string
		realIP  string
		want    string
	}{
		{"no proxies: XFF ignored", false, "192.0.2.1:1", "203.0.113.1", "", "192.0.2.1"},
		{"no proxies: X-Real-IP ignored", false, "192.0.2.1:1", "", "203.0.113.1", "192.0.2.1"},
		{"untrusted peer", true, "192.0.2.1:1", "203.0.113.1", "203.0.113.2", "192.0.2.1"},
		{"loopback is not trusted by default", true, "127.0.0.1:1", "203.0.113.1", "", "127.0.0.1"},
		{"private is not trusted by default", true, "192.168.1.1:1", "203.0.113.1", "", "192.168.1.1"},
		{"trusted peer: XFF", true, "10.1.2.3:1", "203.0.113.1", "", "203.0.113.1"},
		{"trusted peer: right-most untrusted", true, "10.1.2.3:1", "198.51.100.9, 203.0.113.1, 10.0.0.7", "", "203.0.113.1"},
		{"trusted peer: X-Real-IP", true, "10.1.2.3:1", "", "203.0.113.3", "203.0.113.3"},
		{"trusted IPv6 peer", true, "[fd00::1]:1", "2001:db8::5", "", "2001:db8::5"},
	} {
		e := echo.New()
		if tc.trusted {
			e.IPExtractor = ipExtractor(trusted)
		} else {
			e.IPExtractor = ipExtractor(nil)
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tc.peer
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if tc.realIP != "" {
			r.Header.Set("X-Real-IP", tc.realIP)
		}
		if got := e.NewContext(r, httptest.NewRecorder()).RealIP(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := ParseTrustedProxies([]string{"10.0.0.0/33", "proxy.example"}); err == nil ||
		!strings.Contains(err.Error(), "entry 0") || !strings.Contains(err.Error(), "entry 1") {
		t.Errorf("bad trusted proxies: %v", err)
	}
	if err := (Config{TrustedProxies: []string{"nope"}}).Validate(); err == nil || !strings.Contains(err.Error(), "trusted proxies") {
		t.Errorf("Config.Validate with a bad trusted proxy: %v", err)
	}
}

// TestAuthGuardWindowAndMemory: failures slide out of the window (the
// address may try again once the oldest is a window old); successes are
// not counted; IPv6 addresses count per /64; at most Addresses are kept.
func TestAuthGuardWindowAndMemory(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	g := newAuthGuard(AuthLimitConfig{Failures: 3, Window: time.Minute, Addresses: 100}, slog.New(slog.DiscardHandler), clock)
	e := echo.New()
	ctx := func(addr string) echo.Context {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = addr + ":1"
		if strings.Contains(addr, ":") {
			r.RemoteAddr = "[" + addr + "]:1"
		}
		return e.NewContext(r, httptest.NewRecorder())
	}
	yes, no := func() bool { return true }, func() bool { return false }
	for range 5 {
		if ok, wait := g.Check(ctx("192.0.2.1"), yes); !ok || wait != 0 {
			t.Fatal("a right token was limited")
		}
	}
	for range 3 { // failures at 0s, 10s, 20s
		g.Check(ctx("192.0.2.1"), no)
		advance(10 * time.Second)
	}
	if _, wait := g.Check(ctx("192.0.2.1"), yes); wait != 30*time.Second {
		t.Fatalf("wait after 3 failures at 30s: %v, want 30s", wait)
	}
	advance(30 * time.Second) // the first failure is a minute old
	if ok, wait := g.Check(ctx("192.0.2.1"), no); ok || wait != 0 {
		t.Fatalf("after the oldest failure left the window: ok %v wait %v, want a check", ok, wait)
	}
	if _, wait := g.Check(ctx("192.0.2.1"), yes); wait != 10*time.Second {
		t.Fatalf("limited again: wait %v, want 10s", wait)
	}
	for _, a := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::3"} {
		g.Check(ctx(a), no)
	}
	if _, wait := g.Check(ctx("2001:db8:1:2::99"), yes); wait == 0 {
		t.Error("three failures within one IPv6 /64 did not limit it")
	}
	if _, wait := g.Check(ctx("2001:db8:1:3::1"), yes); wait != 0 {
		t.Error("another /64 was limited")
	}
	for i := range 500 {
		g.Check(ctx(fmt.Sprintf("10.0.%d.%d", i/256, i%256)), no)
	}
	if n := g.tracked(); n != 100 {
		t.Errorf("the guard remembers %d addresses, want at most 100", n)
	}
}
