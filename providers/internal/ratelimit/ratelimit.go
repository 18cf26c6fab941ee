// Package ratelimit is an http.RoundTripper that honors forge rate limits for
// the forges' API clients: on 403 or 429 with Retry-After, with an
// exhausted rate limit and its reset time, or with a secondary-limit
// message, it waits and retries with backoff. Ordinary reports give up after
// a bounded total wait; a request whose context is marked with Final retries
// until its context ends, so the last state of a run always lands.
package ratelimit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type finalKey struct{}

// Final marks ctx as carrying the final report of a run: rate limits are
// waited out for as long as ctx lasts, however long MaxWait is.
func Final(ctx context.Context) context.Context { return context.WithValue(ctx, finalKey{}, true) }

// IsFinal reports whether ctx was marked with Final.
func IsFinal(ctx context.Context) bool { v, _ := ctx.Value(finalKey{}).(bool); return v }

// Transport retries rate-limited requests. The zero value is not usable: set
// Base or leave it nil for http.DefaultTransport, and call SetDefaults.
type Transport struct {
	Base       http.RoundTripper // sends the requests; nil = http.DefaultTransport
	MaxWait    time.Duration     // total waiting allowed per request outside Final; default 1m, negative = never wait
	Backoff    time.Duration     // first wait when a rate-limit answer says nothing about when to retry (doubles each time); default 1m
	MaxBackoff time.Duration     // ceiling of one backoff wait; default 5m
	Transient  int               // retries of GET/PUT/PATCH/DELETE after 502/503/504 or a network error; default 2, negative = none
	Logger     *slog.Logger      // retries are logged at Warn; nil = slog.Default()

	// Sleep waits d or until ctx ends; nil = a timer. Tests may shorten it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for reset times; nil = time.Now.
	Now func() time.Time
}

// SetDefaults fills in zero fields.
func (t *Transport) SetDefaults() {
	if t.Base == nil {
		t.Base = http.DefaultTransport
	}
	if t.MaxWait == 0 {
		t.MaxWait = time.Minute
	}
	if t.Backoff <= 0 {
		t.Backoff = time.Minute
	}
	if t.MaxBackoff <= 0 {
		t.MaxBackoff = 5 * time.Minute
	}
	if t.Transient == 0 {
		t.Transient = 2
	}
	if t.Logger == nil {
		t.Logger = slog.Default()
	}
	if t.Sleep == nil {
		t.Sleep = sleep
	}
	if t.Now == nil {
		t.Now = time.Now
	}
}

// ConfigDefaults fills in the rate-limit settings the forges' client
// configs share, as their field comments promise: MaxWait 1m when
// zero (negative stays), Backoff 1m when not positive, a clone of
// http.DefaultTransport that waits at most 30 s for response headers, and
// slog.Default().
func ConfigDefaults(maxWait, backoff *time.Duration, base *http.RoundTripper, logger **slog.Logger) {
	if *maxWait == 0 {
		*maxWait = time.Minute
	}
	if *backoff <= 0 {
		*backoff = time.Minute
	}
	if *base == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 30 * time.Second
		*base = tr
	}
	if *logger == nil {
		*logger = slog.Default()
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// RoundTrip sends req, waiting out rate limits as described on Transport.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	final := IsFinal(ctx)

	// The body is replayed on every attempt.
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading request body: %w", err)
		}
	}

	var waited time.Duration
	backoff := t.Backoff
	transient := 0
	for attempt := 1; ; attempt++ {
		r := req.Clone(ctx)
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			r.ContentLength = int64(len(body))
		}
		resp, err := t.Base.RoundTrip(r)

		var wait time.Duration
		var why string
		switch {
		case err != nil:
			if ctx.Err() != nil || !idempotent(req.Method) || transient >= t.Transient {
				return nil, err
			}
			transient++
			wait, why = time.Duration(transient)*time.Second, "network error"
		case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests:
			var limited bool
			resp, wait, limited = t.rateLimited(resp)
			if !limited {
				return resp, nil
			}
			why = "rate limited"
			if wait == 0 {
				wait, backoff = backoff, min(2*backoff, t.MaxBackoff)
			}
		case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable ||
			resp.StatusCode == http.StatusGatewayTimeout:
			if !idempotent(req.Method) || transient >= t.Transient {
				return resp, nil
			}
			transient++
			wait, why = time.Duration(transient)*time.Second, resp.Status
		default:
			return resp, nil
		}

		// Give up when waiting is not allowed or cannot end in time.
		giveUp := !final && (t.MaxWait < 0 || waited+wait > t.MaxWait)
		if dl, ok := ctx.Deadline(); ok && t.Now().Add(wait).After(dl) {
			giveUp = true
		}
		if giveUp {
			if err != nil {
				return nil, err
			}
			return resp, nil
		}
		if resp != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		}
		t.Logger.Warn("forge request delayed", "method", req.Method, "path", req.URL.Path,
			"reason", why, "wait", wait, "attempt", attempt, "final", final)
		if err := t.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("waiting %s to retry %s %s (%s): %w", wait, req.Method, req.URL.Path, why, err)
		}
		waited += wait
	}
}

// rateLimited says whether a 403/429 answer is a rate limit and how long the
// forge asks to wait (0 = unknown, back off). The returned response has its
// body intact.
func (t *Transport) rateLimited(resp *http.Response) (*http.Response, time.Duration, bool) {
	h := resp.Header
	if d, ok := RetryAfter(h, t.Now()); ok {
		return resp, d, true
	}
	// x-ratelimit-remaining/x-ratelimit-reset, or without the x- prefix
	// (RateLimit-Remaining/RateLimit-Reset), as forges send them. Both
	// resets are Unix seconds.
	for _, p := range []string{"X-Ratelimit-", "Ratelimit-"} {
		if h.Get(p+"Remaining") != "0" {
			continue
		}
		if reset, err := strconv.ParseInt(h.Get(p+"Reset"), 10, 64); err == nil {
			return resp, max(time.Unix(reset, 0).Sub(t.Now())+time.Second, time.Second), true
		}
		return resp, 0, true
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return resp, 0, true
	}
	// A 403 is a rate limit only when it says so (a secondary limit);
	// otherwise it is a permission error and is returned as it is.
	peek, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(peek), resp.Body), resp.Body}
	if err != nil {
		return resp, 0, false
	}
	if strings.Contains(strings.ToLower(string(peek)), "secondary rate limit") {
		return resp, 0, true
	}
	return resp, 0, false
}

// RetryAfter is the wait a Retry-After header asks for (seconds or an HTTP
// date, at least a second); false without one.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return max(time.Duration(s)*time.Second, time.Second), true
	}
	if when, err := http.ParseTime(v); err == nil {
		return max(when.Sub(now), time.Second), true
	}
	return 0, false
}

type readCloser struct {
	io.Reader
	io.Closer
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}
