package ingress

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/stores/storestest"
	"github.com/hookrun/hookrun/workflows"
)

const testAPIToken = "api-test-token"

// storeCanceller cancels through the run record, as `hookrun ingress` does.
type storeCanceller struct{ runs *stores.RunStore }

func (c storeCanceller) Cancel(ctx context.Context, id string) error {
	_, err := c.runs.RequestCancel(ctx, id)
	return err
}

func apiEnv(t *testing.T) *testEnv {
	t.Helper()
	env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow})
	env.srv.RegisterAPI(APIConfig{Token: testAPIToken, FollowGrace: 100 * time.Millisecond}, env.q.Runs(), env.q.Logs(), storeCanceller{env.q.Runs()})
	return env
}

func apiDo(t *testing.T, env *testEnv, method, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, env.http.URL+path, nil)
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

func putRecord(t *testing.T, q *storestest.Queue, wf, repo string, status workflows.Status) *stores.RunRecord {
	t.Helper()
	rec := &stores.RunRecord{ID: queue.NewRunID(), Workflow: wf, Repo: repo, Status: status, Attempt: 1,
		Event: workflows.Event{Forge: workflows.Forge("github"), Repo: repo}, CreatedAt: time.Now().UTC()}
	if _, err := q.Runs().Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestAPIAuth(t *testing.T) {
	env := apiEnv(t)
	for _, tok := range []string{"", "wrong", testAPIToken + "x", testAPIToken[:5]} {
		if code, body := apiDo(t, env, http.MethodGet, "/api/v1/runs", tok); code != http.StatusUnauthorized || strings.Contains(body, testAPIToken) {
			t.Errorf("token %q: %d %s", tok, code, body)
		}
	}
	if code, _ := apiDo(t, env, http.MethodGet, "/api/v1/runs", testAPIToken); code != http.StatusOK {
		t.Errorf("right token: %d", code)
	}
}

func TestAPIDisabledWithoutToken(t *testing.T) {
	env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow})
	env.srv.RegisterAPI(APIConfig{}, env.q.Runs(), env.q.Logs(), storeCanceller{env.q.Runs()})
	if code, _ := apiDo(t, env, http.MethodGet, "/api/v1/runs", ""); code != http.StatusNotFound {
		t.Fatalf("API without a token configured answered %d, want 404", code)
	}
}

func TestAPIListGetFilters(t *testing.T) {
	env := apiEnv(t)
	a := putRecord(t, env.q, "lint", "o/a", workflows.StatusSucceeded)
	b := putRecord(t, env.q, "lint", "o/b", workflows.StatusFailed)
	c := putRecord(t, env.q, "review", "o/a", workflows.StatusQueued)
	for _, tc := range []struct {
		query string
		want  []string // newest first
	}{
		{"", []string{c.ID, b.ID, a.ID}},
		{"?workflow=lint", []string{b.ID, a.ID}},
		{"?repo=o/a", []string{c.ID, a.ID}},
		{"?status=failed", []string{b.ID}},
		{"?repo=o/a&workflow=lint", []string{a.ID}},
		{"?limit=1", []string{c.ID}},
	} {
		code, body := apiDo(t, env, http.MethodGet, "/api/v1/runs"+tc.query, testAPIToken)
		var got struct {
			Runs []stores.RunRecord `json:"runs"`
		}
		if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil {
			t.Fatalf("%s: %d %v %s", tc.query, code, err, body)
		}
		var ids []string
		for _, r := range got.Runs {
			ids = append(ids, r.ID)
		}
		if strings.Join(ids, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: got %v, want %v", tc.query, ids, tc.want)
		}
	}
	if code, _ := apiDo(t, env, http.MethodGet, "/api/v1/runs?limit=0", testAPIToken); code != http.StatusBadRequest {
		t.Errorf("limit=0: %d, want 400", code)
	}
	code, body := apiDo(t, env, http.MethodGet, "/api/v1/runs/"+b.ID, testAPIToken)
	if code != http.StatusOK || !strings.Contains(body, `"status":"failed"`) || !strings.Contains(body, `"workflow":"lint"`) {
		t.Errorf("get: %d %s", code, body)
	}
	if code, _ := apiDo(t, env, http.MethodGet, "/api/v1/runs/01NOSUCHRUN0000000000000000", testAPIToken); code != http.StatusNotFound {
		t.Errorf("unknown run: %d, want 404", code)
	}
}

// GET /api/v1/runs pages with next_cursor ("" on the last page), filters
// by pull request, and refuses bad parameters with 400 and a message.
func TestAPIListPagesAndParams(t *testing.T) {
	env := apiEnv(t)
	var want []string // newest first
	for i := range 7 {
		rec := &stores.RunRecord{ID: queue.NewRunID(), Workflow: "lint", Repo: "o/a", Status: workflows.StatusSucceeded, Attempt: 1,
			Event:     workflows.Event{Forge: workflows.Forge("github"), Repo: "o/a", PullRequest: &workflows.PullRequest{Number: 1 + i%2}},
			CreatedAt: time.Now().UTC()}
		if _, err := env.q.Runs().Create(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		want = append([]string{rec.ID}, want...)
	}
	type page struct {
		Runs       []stores.RunRecord `json:"runs"`
		NextCursor *string            `json:"next_cursor"`
	}
	get := func(query string) page {
		t.Helper()
		code, body := apiDo(t, env, http.MethodGet, "/api/v1/runs"+query, testAPIToken)
		var p page
		if err := json.Unmarshal([]byte(body), &p); code != http.StatusOK || err != nil || p.NextCursor == nil {
			t.Fatalf("%s: %d %v %s", query, code, err, body)
		}
		return p
	}
	var got []string
	cursor, pages := "", 0
	for {
		p := get("?workflow=lint&limit=3&cursor=" + url.QueryEscape(cursor))
		pages++
		for _, r := range p.Runs {
			got = append(got, r.ID)
		}
		if *p.NextCursor == "" {
			break
		}
		cursor = *p.NextCursor
	}
	if strings.Join(got, ",") != strings.Join(want, ",") || pages != 3 {
		t.Errorf("paged: %v in %d pages, want %v in 3", got, pages, want)
	}
	p := get("?repo=o/a&pr=2")
	if len(p.Runs) != 3 || *p.NextCursor != "" {
		t.Errorf("pr=2: %d runs, next %q; want 3 and none", len(p.Runs), *p.NextCursor)
	}
	for _, r := range p.Runs {
		if r.Event.Number() != 2 {
			t.Errorf("pr=2 listed run %s of #%d", r.ID, r.Event.Number())
		}
	}
	for _, tc := range []struct{ query, msg string }{
		{"?limit=0", "limit must be between 1 and 1000"},
		{"?limit=1001", "limit must be between 1 and 1000"},
		{"?limit=x", "limit must be between 1 and 1000"},
		{"?pr=0", "pr must be"},
		{"?pr=seven", "pr must be"},
		{"?status=done", "status must be one of queued, running"},
		{"?cursor=bogus", "cursor is not one a previous page returned"},
		{"?repository=o/a", `unknown parameter \"repository\"`},
	} {
		code, body := apiDo(t, env, http.MethodGet, "/api/v1/runs"+tc.query, testAPIToken)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %s, want 400 saying %q", tc.query, code, body, tc.msg)
		}
	}
}

func TestAPICancel(t *testing.T) {
	env := apiEnv(t)
	queued := putRecord(t, env.q, "lint", "o/a", workflows.StatusQueued)
	running := putRecord(t, env.q, "lint", "o/a", workflows.StatusRunning)
	done := putRecord(t, env.q, "lint", "o/a", workflows.StatusSucceeded)

	if code, _ := apiDo(t, env, http.MethodPost, "/api/v1/runs/"+queued.ID+"/cancel", testAPIToken); code != http.StatusAccepted {
		t.Fatalf("cancel queued: %d", code)
	}
	rec, _, _ := env.q.Runs().Get(context.Background(), queued.ID)
	if rec.Status != workflows.StatusCancelled {
		t.Errorf("queued run after cancel: %s, want cancelled", rec.Status)
	}
	if code, _ := apiDo(t, env, http.MethodPost, "/api/v1/runs/"+running.ID+"/cancel", testAPIToken); code != http.StatusAccepted {
		t.Fatalf("cancel running: %d", code)
	}
	rec, _, _ = env.q.Runs().Get(context.Background(), running.ID)
	if !rec.CancelRequested || rec.Status != workflows.StatusRunning {
		t.Errorf("running run after cancel: %+v; want CancelRequested for its claimant to act on", rec)
	}
	if code, _ := apiDo(t, env, http.MethodPost, "/api/v1/runs/"+done.ID+"/cancel", testAPIToken); code != http.StatusConflict {
		t.Errorf("cancel finished run: %d, want 409", code)
	}
	if code, _ := apiDo(t, env, http.MethodPost, "/api/v1/runs/01NOSUCHRUN0000000000000000/cancel", testAPIToken); code != http.StatusNotFound {
		t.Errorf("cancel unknown run: %d, want 404", code)
	}
}

func TestAPILogsTextAndFollow(t *testing.T) {
	env := apiEnv(t)
	ctx := context.Background()
	rec := putRecord(t, env.q, "lint", "o/a", workflows.StatusRunning)
	_, rev, err := env.q.Runs().Get(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	logs := env.q.Logs()
	for _, l := range []stores.LogLine{
		{RunID: rec.ID, StepID: "build", Stream: stores.StreamStdout, Text: "compiling"},
		{RunID: rec.ID, StepID: "build", Stream: stores.StreamStderr, Text: "warning: x"},
	} {
		if err := logs.Append(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := logs.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	code, body := apiDo(t, env, http.MethodGet, "/api/v1/runs/"+rec.ID+"/logs", testAPIToken)
	if code != http.StatusOK || body != "[build] compiling\n[build] (stderr) warning: x\n" {
		t.Fatalf("logs: %d %q", code, body)
	}

	// follow: the stored lines, a live one, then `end` once the run is over.
	req, _ := http.NewRequest(http.MethodGet, env.http.URL+"/api/v1/runs/"+rec.ID+"/logs?follow=1", nil)
	req.Header.Set("Authorization", "Bearer "+testAPIToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		var ev string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				events <- ev + " " + strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	next := func() string {
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
			return ""
		}
	}
	for _, want := range []string{"compiling", "warning: x"} {
		if e := next(); !strings.HasPrefix(e, "log ") || !strings.Contains(e, want) {
			t.Fatalf("event %q, want a log event with %q", e, want)
		}
	}
	if err := logs.Append(ctx, stores.LogLine{RunID: rec.ID, StepID: "test", Stream: stores.StreamStdout, Text: "live line"}); err != nil {
		t.Fatal(err)
	}
	_ = logs.Flush(ctx)
	if e := next(); !strings.Contains(e, "live line") {
		t.Fatalf("event %q, want the live line", e)
	}
	rec.Status = workflows.StatusSucceeded
	if _, err := env.q.Runs().Update(ctx, rec, rev); err != nil {
		t.Fatal(err)
	}
	if e := next(); e != `end {"status":"succeeded"}` {
		t.Fatalf("event %q, want end with the final status", e)
	}
	if _, ok := <-events; ok {
		t.Fatal("the stream went on after end")
	}
}
