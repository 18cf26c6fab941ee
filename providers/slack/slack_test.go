package slack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// fakeSlack is a response_url endpoint: it records every message and
// answers with code.
type fakeSlack struct {
	*httptest.Server
	mu    sync.Mutex
	got   []message
	code  int
	retry string
}

func newFake(t *testing.T) *fakeSlack {
	f := &fakeSlack{code: http.StatusOK}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/commands/T1/42/secret" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s (%s): want POST /commands/T1/42/secret as JSON", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var m message
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("body %q: %v", b, err)
		}
		f.mu.Lock()
		f.got = append(f.got, m)
		code, retry := f.code, f.retry
		f.mu.Unlock()
		if retry != "" {
			w.Header().Set("Retry-After", retry)
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSlack) messages() []message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]message(nil), f.got...)
}

func chatReport(responseURL string, phase contract.Phase, status workflows.Status) *contract.RunReport {
	return &contract.RunReport{Phase: phase, RunID: "01RUN", Attempt: 1, Status: status,
		Workflow: &workflows.Workflow{Name: "slack-deploy"},
		Event: &workflows.Event{Forge: workflows.Forge("github"), Kind: workflows.KindChat, Repo: "myorg/app",
			Chat: &workflows.Chat{Platform: workflows.ChatSlack, UserID: "U1", ChannelID: "C1", Command: "/hookrun",
				Text: "deploy staging", ResponseURL: responseURL}},
		Body:  "Deployed to *staging* <!channel>",
		Steps: []workflows.StepState{{ID: "deploy", Status: status}}}
}

func TestReportPostsFinalResult(t *testing.T) {
	f := newFake(t)
	r, err := New(Config{ResponseURLPrefix: f.URL + "/", RunURL: "https://hookrun.example/runs/{run}"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, p := range []contract.Phase{contract.PhaseStart, contract.PhaseProgress} {
		if _, err := r.Report(ctx, chatReport(f.URL+"/commands/T1/42/secret", p, workflows.StatusRunning)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if n := len(f.messages()); n != 0 {
		t.Fatalf("%d messages for start and progress, want none", n)
	}
	if _, err := r.Report(ctx, chatReport(f.URL+"/commands/T1/42/secret", contract.PhaseFinal, workflows.StatusSucceeded)); err != nil {
		t.Fatal(err)
	}
	got := f.messages()
	if len(got) != 1 {
		t.Fatalf("%d messages, want 1", len(got))
	}
	want := ":white_check_mark: slack-deploy: Succeeded (run 01RUN) on myorg/app (/hookrun deploy staging) <https://hookrun.example/runs/01RUN|details>\n" +
		"Deployed to *staging* &lt;!channel&gt;"
	if got[0].ResponseType != InChannel || got[0].Text != want || got[0].ReplaceOriginal {
		t.Errorf("message %+v, want in_channel %q", got[0], want)
	}
}

func TestReportRefusesOtherURLs(t *testing.T) {
	f := newFake(t)
	r, err := New(Config{}) // only https://hooks.slack.com/
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{f.URL + "/commands/T1/42/secret", "https://hooks.slack.com.evil.example/x", ""} {
		_, err := r.Report(context.Background(), chatReport(u, contract.PhaseFinal, workflows.StatusFailed))
		if !errors.Is(err, contract.ErrRefused) {
			t.Errorf("%q: err %v, want a refusal", u, err)
		}
		if u != "" && err != nil && strings.Contains(err.Error(), u) {
			t.Errorf("the error repeats the URL: %v", err)
		}
	}
	if n := len(f.messages()); n != 0 {
		t.Errorf("%d messages reached a URL outside the prefix", n)
	}
}

func TestReportAnswers(t *testing.T) {
	f := newFake(t)
	r, err := New(Config{ResponseURLPrefix: f.URL + "/", ResponseType: Ephemeral})
	if err != nil {
		t.Fatal(err)
	}
	u := f.URL + "/commands/T1/42/secret"
	for _, c := range []struct {
		code    int
		retry   string
		refused bool
		after   time.Duration
	}{
		{http.StatusNotFound, "", true, 0}, // expired
		{http.StatusGone, "", true, 0},
		{http.StatusInternalServerError, "", false, 0},
		{http.StatusTooManyRequests, "7", false, 7 * time.Second},
	} {
		f.mu.Lock()
		f.code, f.retry = c.code, c.retry
		f.mu.Unlock()
		_, err := r.Report(context.Background(), chatReport(u, contract.PhaseFinal, workflows.StatusFailed))
		if err == nil || errors.Is(err, contract.ErrRefused) != c.refused {
			t.Errorf("%d: err %v, want refused %v", c.code, err, c.refused)
		}
		if after, ok := contract.RetryAfter(err); c.after != 0 && (!ok || after != c.after) {
			t.Errorf("%d: retry after %v %v, want %v", c.code, after, ok, c.after)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("the error names the URL: %v", err)
		}
	}
	if m := f.messages(); len(m) != 4 || m[0].ResponseType != Ephemeral || !strings.HasPrefix(m[0].Text, ":x: slack-deploy: Failed") {
		t.Errorf("messages %+v", m)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{ResponseType: "channel"}, {ResponseURLPrefix: "https://hooks.slack.com"}, {ResponseURLPrefix: "hooks.slack.com/"}} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
