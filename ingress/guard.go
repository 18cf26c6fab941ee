package ingress

import (
	"container/list"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Defaults of AuthLimitConfig.
const (
	DefaultAuthFailures  = 10
	DefaultAuthWindow    = time.Minute
	DefaultAuthAddresses = 16384
)

// AuthLimitConfig bounds the wrong API tokens one client address may try
// (the bearer token of /api/v1 and the web UI's login form alike).
type AuthLimitConfig struct {
	// Failures is how many failed token checks an address may make within
	// Window; past it every token check from the address is answered 429
	// with Retry-After until the oldest of those failures is Window old.
	// Default DefaultAuthFailures.
	Failures int
	// Window is the sliding window failures are counted over. Default
	// DefaultAuthWindow.
	Window time.Duration
	// Addresses caps how many addresses are remembered (least recently
	// failed forgotten first), which bounds the memory. Default
	// DefaultAuthAddresses.
	Addresses int
}

func (c *AuthLimitConfig) setDefaults() {
	if c.Failures == 0 {
		c.Failures = DefaultAuthFailures
	}
	if c.Window == 0 {
		c.Window = DefaultAuthWindow
	}
	if c.Addresses == 0 {
		c.Addresses = DefaultAuthAddresses
	}
}

// Validate reports what is wrong with c, defaults applied.
func (c AuthLimitConfig) Validate() error {
	c.setDefaults()
	if c.Failures < 1 || c.Window < time.Second || c.Addresses < 1 {
		return fmt.Errorf("checking auth limit: failures (%d) and addresses (%d) must be positive, window (%v) at least 1s", c.Failures, c.Window, c.Addresses)
	}
	return nil
}

// ParseTrustedProxies parses trusted proxy entries: CIDRs (10.0.0.0/8,
// fd00::/8) or single addresses (a /32 or /128).
func ParseTrustedProxies(entries []string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	var errs []error
	for i, s := range entries {
		s = strings.TrimSpace(s)
		if ip := net.ParseIP(s); ip != nil {
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			out = append(out, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("entry %d: want a CIDR such as 10.0.0.0/8 or an IP address, got %q", i, s))
			continue
		}
		out = append(out, n)
	}
	return out, errors.Join(errs...)
}

// ipExtractor is what c.RealIP() answers everywhere (the UI's and the
// webhooks' logs, the limit on token guesses): the connection's peer,
// unless the peer is one of trusted, in which case X-Forwarded-For (read
// from the right, skipping trusted hops) or else X-Real-IP names the
// client. Loopback, link-local and private addresses are trusted only when
// a range lists them: without trusted proxies no header is believed.
func ipExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	xff, realIP := echo.ExtractIPFromXFFHeader(opts...), echo.ExtractIPFromRealIPHeader(opts...)
	return func(r *http.Request) string {
		if len(r.Header.Values(echo.HeaderXForwardedFor)) > 0 {
			return xff(r)
		}
		return realIP(r)
	}
}

// AuthGuard limits failed token checks per client address (AuthLimitConfig):
// the API's bearer check and the UI's login form share one, so that an
// address has one budget of guesses whichever door it knocks on.
type AuthGuard struct {
	cfg    AuthLimitConfig
	logger *slog.Logger
	now    func() time.Time

	mu    sync.Mutex
	lru   *list.List // of *guardEntry, most recently failed first
	addrs map[string]*list.Element
}

// guardEntry is one address's recent failures, oldest first (at most
// cfg.Failures of them).
type guardEntry struct {
	key    string
	fails  []time.Time
	warned bool // its current refusal was logged at warn level
}

func newAuthGuard(cfg AuthLimitConfig, logger *slog.Logger, now func() time.Time) *AuthGuard {
	cfg.setDefaults()
	return &AuthGuard{cfg: cfg, logger: logger, now: now, lru: list.New(), addrs: map[string]*list.Element{}}
}

// clientKey is what failures are counted by: the client address
// (c.RealIP()), an IPv6 one reduced to its /64, which one host usually has
// whole.
func clientKey(addr string) string {
	ip := net.ParseIP(addr)
	switch {
	case ip == nil:
		return addr
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// Check runs the token check ok for the request's client address: while
// the address has used up its failures it answers (false, wait) without
// calling ok, and logs the refusal; otherwise it returns ok()'s answer,
// counting a false one. The right token is refused too while the address
// is limited: else the 429 would tell a guess from the token all the same.
func (g *AuthGuard) Check(c echo.Context, ok func() bool) (passed bool, retryAfter time.Duration) {
	addr := c.RealIP()
	key := clientKey(addr)
	if wait, first := g.limited(key); wait > 0 {
		level := slog.LevelDebug
		if first {
			level = slog.LevelWarn
		}
		g.logger.Log(c.Request().Context(), level, "refusing a token check: too many wrong tokens from this address",
			"remote", addr, "path", c.Path(), "failures", g.cfg.Failures, "window", g.cfg.Window, "retry_after", wait.Round(time.Second))
		return false, wait
	}
	if ok() {
		return true, 0
	}
	g.fail(key)
	return false, 0
}

// limited is how long key must wait before its next token check (0: it
// may check now); first is true for the first refusal of this period.
func (g *AuthGuard) limited(key string) (wait time.Duration, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	el, ok := g.addrs[key]
	if !ok {
		return 0, false
	}
	e := el.Value.(*guardEntry)
	now := g.now()
	e.prune(now, g.cfg.Window)
	if len(e.fails) < g.cfg.Failures {
		e.warned = false
		if len(e.fails) == 0 {
			g.lru.Remove(el)
			delete(g.addrs, key)
		}
		return 0, false
	}
	first = !e.warned
	e.warned = true
	return e.fails[0].Add(g.cfg.Window).Sub(now), first
}

// fail counts a failed check of key now.
func (g *AuthGuard) fail(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	el, ok := g.addrs[key]
	if !ok {
		el = g.lru.PushFront(&guardEntry{key: key})
		g.addrs[key] = el
		for g.lru.Len() > g.cfg.Addresses {
			old := g.lru.Back()
			g.lru.Remove(old)
			delete(g.addrs, old.Value.(*guardEntry).key)
		}
	}
	g.lru.MoveToFront(el)
	e := el.Value.(*guardEntry)
	e.prune(now, g.cfg.Window)
	e.fails = append(e.fails, now)
	if len(e.fails) > g.cfg.Failures {
		e.fails = e.fails[len(e.fails)-g.cfg.Failures:]
	}
}

// prune drops the failures older than window.
func (e *guardEntry) prune(now time.Time, window time.Duration) {
	i := 0
	for i < len(e.fails) && !now.Before(e.fails[i].Add(window)) {
		i++
	}
	e.fails = e.fails[i:]
}

// tracked is how many addresses the guard remembers (tests).
func (g *AuthGuard) tracked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.addrs)
}

// SetRetryAfter sets the Retry-After header of a 429: wait in whole
// seconds, rounded up, at least 1.
func SetRetryAfter(c echo.Context, wait time.Duration) {
	s := max(1, int(math.Ceil(wait.Seconds())))
	c.Response().Header().Set("Retry-After", strconv.Itoa(s))
}
