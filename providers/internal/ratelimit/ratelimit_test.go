package ratelimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// answer is one scripted response of the fake forge.
type answer struct {
	status int
	header map[string]string
	body   string
}

var (
	ok            = answer{status: 201, body: `{"id":1}`}
	secondary     = answer{status: 403, body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`}
	secondaryIn1s = answer{status: 403, header: map[string]string{"Retry-After": "1"}, body: secondary.body}
	forbidden     = answer{status: 403, header: map[string]string{"X-Ratelimit-Remaining": "4999"}, body: `{"message":"Resource not accessible by integration"}`}
	badGateway    = answer{status: 502, body: "bad gateway"}
)

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func TestTransport(t *testing.T) {
	reset := strconv.FormatInt(now.Add(30*time.Second).Unix(), 10)
	cases := []struct {
		name      string
		method    string
		final     bool
		maxWait   time.Duration
		answers   []answer
		wantCalls int
		wantWaits []time.Duration
		wantCode  int
		wantBody  string
	}{
		{name: "secondary limit with retry-after", method: "POST", answers: []answer{secondaryIn1s, ok},
			wantCalls: 2, wantWaits: []time.Duration{time.Second}, wantCode: 201},
		{name: "secondary limit without hint backs off", method: "PATCH", answers: []answer{secondary, ok},
			wantCalls: 2, wantWaits: []time.Duration{10 * time.Second}, wantCode: 201},
		{name: "backoff doubles up to the ceiling", method: "PATCH", final: true, answers: []answer{secondary, secondary, secondary, secondary, ok},
			wantCalls: 5, wantWaits: []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 40 * time.Second}, wantCode: 201},
		{name: "gitlab 429 with reset", method: "PUT", answers: []answer{{status: 429, header: map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": reset}}, ok},
			wantCalls: 2, wantWaits: []time.Duration{31 * time.Second}, wantCode: 201},
		{name: "github primary limit with reset", method: "POST", answers: []answer{{status: 403, header: map[string]string{"X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": reset}, body: `{"message":"API rate limit exceeded"}`}, ok},
			wantCalls: 2, wantWaits: []time.Duration{31 * time.Second}, wantCode: 201},
		{name: "429 without hint backs off", method: "POST", answers: []answer{{status: 429}, ok},
			wantCalls: 2, wantWaits: []time.Duration{10 * time.Second}, wantCode: 201},
		{name: "permission 403 is returned as it is", method: "POST", answers: []answer{forbidden, ok},
			wantCalls: 1, wantCode: 403, wantBody: forbidden.body},
		{name: "over max wait gives up outside final", method: "POST", maxWait: 30 * time.Second,
			answers:   []answer{{status: 403, header: map[string]string{"Retry-After": "120"}, body: secondary.body}, ok},
			wantCalls: 1, wantCode: 403, wantBody: secondary.body},
		{name: "final waits beyond max wait", method: "POST", final: true, maxWait: 30 * time.Second,
			answers:   []answer{{status: 403, header: map[string]string{"Retry-After": "120"}, body: secondary.body}, ok},
			wantCalls: 2, wantWaits: []time.Duration{120 * time.Second}, wantCode: 201},
		{name: "no waiting at all with negative max wait", method: "POST", maxWait: -1, answers: []answer{secondaryIn1s, ok},
			wantCalls: 1, wantCode: 403},
		{name: "502 on PATCH is retried", method: "PATCH", answers: []answer{badGateway, ok},
			wantCalls: 2, wantWaits: []time.Duration{time.Second}, wantCode: 201},
		{name: "502 on POST is not retried (it may have been applied)", method: "POST", answers: []answer{badGateway, ok},
			wantCalls: 1, wantCode: 502, wantBody: "bad gateway"},
		{name: "transient retries are bounded", method: "GET", answers: []answer{badGateway, badGateway, badGateway, ok},
			wantCalls: 3, wantWaits: []time.Duration{time.Second, 2 * time.Second}, wantCode: 502},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				i := len(bodies)
				bodies = append(bodies, string(b))
				mu.Unlock()
				a := tc.answers[i]
				for k, v := range a.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(a.status)
				io.WriteString(w, a.body)
			}))
			defer srv.Close()

			var waits []time.Duration
			tr := &Transport{MaxWait: tc.maxWait, Backoff: 10 * time.Second, MaxBackoff: 40 * time.Second,
				Now:   func() time.Time { return now },
				Sleep: func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
			tr.SetDefaults()
			ctx := context.Background()
			if tc.final {
				ctx = Final(ctx)
			}
			req, _ := http.NewRequestWithContext(ctx, tc.method, srv.URL+"/repos/o/r/issues/1/comments", strings.NewReader(`{"body":"hello"}`))
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.wantCode)
			}
			if tc.wantBody != "" && string(got) != tc.wantBody {
				t.Errorf("body %q, want %q", got, tc.wantBody)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != tc.wantCalls {
				t.Errorf("%d calls, want %d", len(bodies), tc.wantCalls)
			}
			for i, b := range bodies {
				if b != `{"body":"hello"}` {
					t.Errorf("attempt %d sent body %q", i+1, b)
				}
			}
			if !slices.Equal(waits, tc.wantWaits) {
				t.Errorf("waits %v, want %v", waits, tc.wantWaits)
			}
		})
	}
}

// TestFinalStopsWithContext: the final report retries for as long as its
// context lasts, and no longer.
func TestFinalStopsWithContext(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(403)
		io.WriteString(w, secondary.body)
	}))
	defer srv.Close()
	tr := &Transport{}
	tr.SetDefaults()
	ctx, cancel := context.WithCancel(Final(context.Background()))
	tr.Sleep = func(ctx context.Context, d time.Duration) error {
		if calls.Load() == 3 {
			cancel()
		}
		return sleep(ctx, time.Millisecond)
	}
	req, _ := http.NewRequestWithContext(ctx, "PATCH", srv.URL+"/x", strings.NewReader("{}"))
	_, err := (&http.Client{Transport: tr}).Do(req)
	if !errors.Is(err, context.Canceled) || calls.Load() != 3 {
		t.Fatalf("err %v after %d calls, want context.Canceled after 3", err, calls.Load())
	}

	// A deadline that ends before the asked wait: give up at once.
	calls.Store(0)
	ctx, cancel2 := context.WithTimeout(Final(context.Background()), 200*time.Millisecond)
	defer cancel2()
	tr.Sleep = func(context.Context, time.Duration) error { t.Error("slept past the deadline"); return nil }
	req, _ = http.NewRequestWithContext(ctx, "PATCH", srv.URL+"/x", strings.NewReader("{}"))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil || resp.StatusCode != 403 || calls.Load() != 1 {
		t.Fatalf("got %v, %v after %d calls; want the 403 after 1", resp, err, calls.Load())
	}
	resp.Body.Close()
}

// TestRealSleep: the default Sleep really waits.
func TestRealSleep(t *testing.T) {
	n := 0
	var first time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(429)
			return
		}
		if d := time.Since(first); d < time.Second {
			t.Errorf("retried after %s, before Retry-After", d)
		}
		w.WriteHeader(200)
	}))
	defer srv.Close()
	tr := &Transport{}
	tr.SetDefaults()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
}

// TestConfigDefaults: zero settings get the documented defaults; set ones,
// and a negative MaxWait ("never wait"), are kept.
func TestConfigDefaults(t *testing.T) {
	mine := &http.Transport{}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cases := []struct {
		name             string
		maxWait, backoff time.Duration
		base             http.RoundTripper
		logger           *slog.Logger
		wantWait         time.Duration
		wantBackoff      time.Duration
	}{
		{name: "zero", wantWait: time.Minute, wantBackoff: time.Minute},
		{name: "negative", maxWait: -1, backoff: -1, wantWait: -1, wantBackoff: time.Minute},
		{name: "set", maxWait: 5 * time.Second, backoff: 2 * time.Second, base: mine, logger: logger, wantWait: 5 * time.Second, wantBackoff: 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, b, base, l := tc.maxWait, tc.backoff, tc.base, tc.logger
			ConfigDefaults(&w, &b, &base, &l)
			if w != tc.wantWait || b != tc.wantBackoff {
				t.Errorf("MaxWait %s Backoff %s, want %s %s", w, b, tc.wantWait, tc.wantBackoff)
			}
			switch {
			case tc.base != nil && base != tc.base:
				t.Errorf("transport replaced")
			case tc.base == nil:
				tr, ok := base.(*http.Transport)
				if !ok || tr == http.DefaultTransport || tr.ResponseHeaderTimeout != 30*time.Second {
					t.Errorf("default transport %#v: want a clone of http.DefaultTransport with a 30 s header timeout", base)
				}
			}
			switch {
			case tc.logger != nil && l != tc.logger:
				t.Errorf("logger replaced")
			case tc.logger == nil && l != slog.Default():
				t.Errorf("logger %v, want slog.Default()", l)
			}
		})
	}
}
