package runner_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
)

// checksGitHub is the part of the GitHub API a run's check run uses, as
// an App: installation tokens for the App's JWT, then check runs with the
// installation token. It checks method, path, auth and strict bodies,
// and appends a PATCH's annotations to the check run's, as GitHub does.
// While limited is set, check run PATCHes from the limitFrom-th on (from
// 1) get a secondary rate limit with Retry-After: retryAfter.
type checksGitHub struct {
	t          *testing.T
	key        *rsa.PublicKey
	retryAfter string
	limitFrom  int
	limited    atomic.Bool

	mu          sync.Mutex
	patchN      int
	limitHit    int
	created     int      // check runs created
	status      string   // of check run 1
	conclusion  string   // of check run 1
	annotations []string // of check run 1, "path:line"
	patches     []string // "status/conclusion/annotations" of each PATCH that landed
}

var (
	reChecksCommit = regexp.MustCompile(`^/repos/octo/demo/commits/abc123/check-runs$`) // samplePR's head
	reChecksID     = regexp.MustCompile(`^/repos/octo/demo/check-runs/(\d+)$`)
)

// checksOutput is a check run's output as GitHub takes it.
type checksOutput struct {
	Title       string `json:"title"`
	Summary     string `json:"summary"`
	Text        string `json:"text"`
	Annotations []struct {
		Path            string `json:"path"`
		StartLine       int    `json:"start_line"`
		EndLine         int    `json:"end_line"`
		AnnotationLevel string `json:"annotation_level"`
		Message         string `json:"message"`
		Title           string `json:"title"`
	} `json:"annotations"`
}

func (f *checksGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p := r.URL.Path
	if r.Method == http.MethodPost && p == "/app/installations/777/access_tokens" {
		raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		claims := jwt.MapClaims{}
		if _, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return f.key, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer("4242"), jwt.WithExpirationRequired()); err != nil {
			f.fail(w, http.StatusUnauthorized, "%s %s: app JWT: %v", r.Method, p, err)
			return
		}
		f.answer(w, http.StatusCreated, map[string]any{"token": "ghs_installation", "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		return
	}
	if got := r.Header.Get("Authorization"); got != "token ghs_installation" {
		f.fail(w, http.StatusUnauthorized, "%s %s: authorization %q", r.Method, p, got)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && p == "/repos/octo/demo/check-runs":
		var in struct {
			Name, Status string
			HeadSHA      string `json:"head_sha"`
			ExternalID   string `json:"external_id"`
			DetailsURL   string `json:"details_url"`
		}
		if err := strictJSON(body, &in); err != nil || in.Name != "hookrun/check" || in.HeadSHA != "abc123" || in.Status != "in_progress" || in.ExternalID != "r1" {
			f.fail(w, http.StatusUnprocessableEntity, "check run %s: %v", body, err)
			return
		}
		f.created++
		f.status = in.Status
		f.answer(w, http.StatusCreated, map[string]any{"id": 1, "name": in.Name, "status": in.Status, "external_id": in.ExternalID})
	case r.Method == http.MethodGet && reChecksCommit.MatchString(p):
		var runs []map[string]any
		if f.created > 0 {
			runs = append(runs, map[string]any{"id": 1, "name": "hookrun/check", "external_id": "r1", "status": f.status,
				"output": map[string]any{"title": nil, "summary": nil, "annotations_count": len(f.annotations)}})
		}
		f.answer(w, http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": append([]map[string]any{}, runs...)})
	case r.Method == http.MethodPatch && reChecksID.FindStringSubmatch(p) != nil && reChecksID.FindStringSubmatch(p)[1] == "1":
		if f.patchN++; f.limited.Load() && f.patchN >= f.limitFrom {
			f.limitHit++
			w.Header().Set("Retry-After", f.retryAfter)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, secondaryBody)
			return
		}
		var in struct {
			Status, Conclusion string
			DetailsURL         string        `json:"details_url"`
			Output             *checksOutput `json:"output"`
		}
		if err := strictJSON(body, &in); err != nil || in.Output == nil || in.Output.Title == "" || len(in.Output.Annotations) > 50 ||
			(in.Status == "completed") != (in.Conclusion != "") {
			f.fail(w, http.StatusUnprocessableEntity, "check run update %s: %v", body, err)
			return
		}
		if in.Status != "" {
			f.status, f.conclusion = in.Status, in.Conclusion
		}
		for _, a := range in.Output.Annotations {
			f.annotations = append(f.annotations, a.Path+":"+strconv.Itoa(a.StartLine))
		}
		f.patches = append(f.patches, fmt.Sprintf("%s/%s/%d", in.Status, in.Conclusion, len(in.Output.Annotations)))
		f.answer(w, http.StatusOK, map[string]any{"id": 1, "status": f.status, "conclusion": f.conclusion})
	default:
		f.fail(w, http.StatusNotFound, "unexpected %s %s", r.Method, p)
	}
}

func (f *checksGitHub) answer(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (f *checksGitHub) fail(w http.ResponseWriter, code int, format string, args ...any) {
	f.t.Errorf(format, args...)
	http.Error(w, `{"message":"refused by the fake"}`, code)
}

// strictJSON decodes one JSON value, refusing unknown fields.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// outboxChecksWorkflow leaves 120 findings and fails.
const outboxChecksWorkflow = `
name: check
steps:
  - id: lint
    run: |
      for i in $(seq 0 119); do
        echo '{"message": "m", "location": {"path": "pkg/f'$i'.go", "range": {"start": {"line": '$((i+1))'}}}, "severity": "ERROR", "code": {"value": "r"}}'
      done > "$HOOKRUN_RESULTS/lint.rdjsonl"
      exit 1
report:
  comment: none
  status: true
`

// A final report whose check run GitHub rate-limits for longer than the
// report may wait is kept in the outbox with its findings; delivered
// later, it completes the run's check run with its conclusion and every
// finding as an annotation, once: whether the limit hit its first PATCH
// (the check run still in progress) or its second (completed, with the
// first 50 annotations).
func TestOutboxCompletesCheckRunOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		limitFrom   int
		status      string   // of the check run before the outbox
		annotations int      // annotations before the outbox
		patches     []string // all PATCHes that landed
	}{
		{"first PATCH", 1, "in_progress", 0, []string{"completed/failure/50", "//50", "//20"}},
		{"second PATCH", 2, "completed", 50, []string{"completed/failure/50", "completed/failure/50", "//20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := outboxCheckRun(t, tc.limitFrom, tc.status, tc.annotations)
			var want []string
			for i := range 120 {
				want = append(want, fmt.Sprintf("pkg/f%d.go:%d", i, i+1))
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if fake.created != 1 || fake.status != "completed" || fake.conclusion != "failure" || !slices.Equal(fake.annotations, want) ||
				!slices.Equal(fake.patches, tc.patches) {
				t.Errorf("%d check runs, %s/%s, %d annotations (want the 120 findings once each), PATCHes %v (want %v)",
					fake.created, fake.status, fake.conclusion, len(fake.annotations), fake.patches, tc.patches)
			}
		})
	}
}

// outboxCheckRun runs outboxChecksWorkflow with its check run PATCHes
// from the limitFrom-th on rate-limited, checks that the final report is
// kept in the outbox and what the check run is then (status, number of
// annotations), lifts the limit and returns the fake once the outbox
// delivered the report.
func outboxCheckRun(t *testing.T, limitFrom int, status string, annotations int) *checksGitHub {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	fake := &checksGitHub{t: t, key: &key.PublicKey, retryAfter: "3", limitFrom: limitFrom}
	fake.limited.Store(true)
	srv := httptest.NewServer(fake)
	defer srv.Close()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	rep, err := github.New(github.Config{APIURL: srv.URL + "/", AppID: 4242,
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		Client:     forge.Client{MaxWait: 300 * time.Millisecond, Backoff: 200 * time.Millisecond, Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	q := openQueue(t, t.TempDir())
	defer q.Close()
	ob := fastOutbox(t, q, rep, log, time.Hour)
	ev := samplePR()
	ev.InstallationID = 777
	res, _, _ := enginetest.Run(t, outboxChecksWorkflow, enginetest.RunOpts{Env: testEnv, Event: ev, Reporter: rep, Cfg: func(c *engine.Config) {
		c.ReportTimeout = 2 * time.Second // shorter than GitHub's Retry-After
		c.Outbox = ob
		c.Logger = log
	}})
	if res.Status != failed || res.Results == nil || len(res.Results.Findings) != 120 {
		t.Fatalf("run %s (%s), results %+v", res.Status, res.Error, res.Results)
	}
	if !strings.Contains(res.ReportError, "kept in the outbox") {
		t.Fatalf("report error %q does not say the final report was kept\n%s", res.ReportError, logs)
	}
	fake.mu.Lock()
	hits, got, n := fake.limitHit, fake.status, len(fake.annotations)
	fake.mu.Unlock()
	if hits == 0 || got != status || n != annotations {
		t.Fatalf("before the outbox: %d limited PATCHes, check run %s with %d annotations; want %s with %d", hits, got, n, status, annotations)
	}

	fake.limited.Store(false)
	ob.Start()
	defer ob.Close()
	eventually(t, 15*time.Second, "the final report delivered from the outbox", func() bool {
		return counter(t, ob, "hookrun_report_outbox_delivered_total") == 1
	})
	return fake
}
