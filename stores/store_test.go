package stores

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/queue/queuetest"
	"github.com/hookrun/hookrun/workflows"
)

// The record as the API shows it (DESIGN.md §6); stored without Raw.
func TestRunRecordGolden(t *testing.T) {
	t.Parallel()
	exit := 0
	started := fixedTime.Add(time.Second)
	finished := fixedTime.Add(time.Minute)
	rec := &RunRecord{ID: "01JDQ5Z8W6N4D4Q3G8M2X7T9AB", Workflow: "pr-review", Repo: "Codertocat/Hello-World",
		Status: workflows.StatusSucceeded, Attempt: 1, Event: goldenEvent(),
		Steps:     []workflows.StepState{{ID: "review", Status: workflows.StatusSucceeded, ExitCode: &exit, StartedAt: &started, FinishedAt: &finished}},
		CommentID: 1234567, HeadSHA: "ec26c3e57ca3a959ca5aad62de7213c562f8c821", Claimant: "runner-a",
		CreatedAt: fixedTime, StartedAt: &started, FinishedAt: &finished}
	data, err := encodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	golden(t, "run_record.golden.json", buf.Bytes())
	if rec.Event.Raw == nil {
		t.Fatal("encodeRecord cleared the caller's Raw")
	}
	// A fresh record shows "steps": [] and "error": "".
	empty, _ := json.Marshal(&RunRecord{ID: "x"})
	for _, want := range []string{`"steps":[]`, `"error":""`, `"status":""`} {
		if !strings.Contains(string(empty), want) {
			t.Errorf("%s lacks %s", empty, want)
		}
	}
}

// A real webhook payload travels intact inside the run request.
func TestRealPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/github/pull_request.opened.json")
	if err != nil {
		t.Fatal(err)
	}
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	req := &queue.RunRequest{Workflow: "pr-review", Event: goldenEvent()}
	req.Event.DeliveryID = "real-payload"
	req.Event.Raw = raw
	res, err := q.Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *queue.Delivery, 1)
	c, err := q.Consume(ctx, queue.ConsumerConfig{AckWait: time.Second, FetchWait: 200 * time.Millisecond}, func(ctx context.Context, d *queue.Delivery) error {
		got <- d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	d := <-got
	// byte for byte as received (the request encoding splices Raw in as it
	// is), but for the whitespace around the value, which JSON drops
	if !bytes.Equal(d.Request.Event.Raw, bytes.TrimSpace(raw)) {
		t.Fatalf("raw payload changed in transit (%d vs %d bytes)", len(d.Request.Event.Raw), len(bytes.TrimSpace(raw)))
	}
	rec, _, err := q.Runs().Get(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Event.Raw != nil || rec.HeadSHA != "ec26c3e57ca3a959ca5aad62de7213c562f8c821" {
		t.Fatalf("record kept Raw or lost the head sha: %+v", rec)
	}
}

func TestRunStoreListWatch(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	rs := q.Runs()
	if recs, _, err := rs.List(ctx, ListFilter{}); err != nil || len(recs) != 0 {
		t.Fatalf("empty List = %v, %v", recs, err)
	}

	type spec struct {
		repo, wf string
		status   workflows.Status
	}
	specs := []spec{
		{"a/one", "review", workflows.StatusSucceeded},
		{"a/one", "triage", workflows.StatusQueued},
		{"b/two", "review", workflows.StatusFailed},
		{"a/one", "review", workflows.StatusRunning},
		{"b/two", "review", workflows.StatusSucceeded},
	}
	var ids []string
	for _, s := range specs {
		rec := &RunRecord{ID: queue.NewRunID(), Workflow: s.wf, Repo: s.repo, Status: s.status, CreatedAt: time.Now()}
		if _, err := rs.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	tests := []struct {
		f    ListFilter
		want []int // indexes into specs, newest first
	}{
		{ListFilter{}, []int{4, 3, 2, 1, 0}},
		{ListFilter{Limit: 2}, []int{4, 3}},
		{ListFilter{Repo: "a/one"}, []int{3, 1, 0}},
		{ListFilter{Workflow: "review", Repo: "b/two"}, []int{4, 2}},
		{ListFilter{Status: workflows.StatusSucceeded}, []int{4, 0}},
		{ListFilter{Repo: "c/none"}, nil},
	}
	for _, tt := range tests {
		got, _, err := rs.List(ctx, tt.f)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs, wantIDs []string
		for _, r := range got {
			gotIDs = append(gotIDs, r.ID)
		}
		for _, i := range tt.want {
			wantIDs = append(wantIDs, ids[i])
		}
		if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
			t.Errorf("List(%+v) = %v, want %v", tt.f, gotIDs, wantIDs)
		}
	}

	// Watch one run: its current value, then each change.
	wctx, cancel := context.WithCancel(ctx)
	ch, err := rs.Watch(wctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	all, err := rs.Watch(wctx, "")
	if err != nil {
		t.Fatal(err)
	}
	next := func(ch <-chan *RunRecord) *RunRecord {
		select {
		case r := <-ch:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("watch: nothing")
			return nil
		}
	}
	if r := next(ch); r.ID != ids[1] || r.Status != workflows.StatusQueued {
		t.Fatalf("first watched value %+v", r)
	}
	for range specs { // the all-runs watch starts with every current record
		next(all)
	}
	for _, st := range []workflows.Status{workflows.StatusRunning, workflows.StatusSucceeded} {
		if _, err := rs.Modify(ctx, ids[1], func(r *RunRecord) bool { r.Status = st; return true }); err != nil {
			t.Fatal(err)
		}
		if r := next(ch); r.Status != st {
			t.Fatalf("watched %s, want %s", r.Status, st)
		}
		if r := next(all); r.ID != ids[1] || r.Status != st {
			t.Fatalf("all-runs watch saw %s %s", r.ID, r.Status)
		}
	}
	cancel()
	for range ch { // closed when ctx ends
	}
	if _, _, err := rs.Get(ctx, "01NOSUCHRUN0000000000000000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}
}

func TestLogStore(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 20*time.Second)
	ls := q.Logs()
	run, other := queue.NewRunID(), queue.NewRunID()
	if lines, err := ls.Read(ctx, run); err != nil || len(lines) != 0 {
		t.Fatalf("Read of a run without output = %v, %v", lines, err)
	}

	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	follow, err := ls.Follow(fctx, run)
	if err != nil {
		t.Fatal(err)
	}

	w := ls.Writer(run, "build", StreamStdout)
	_, _ = w.Write([]byte("compiling\nlinking"))
	_, _ = w.Write([]byte(" done\r\npartial"))
	if err := ls.Append(ctx, LogLine{RunID: other, StepID: "x", Text: "not mine"}); err != nil {
		t.Fatal(err)
	}
	if err := ls.Append(ctx, LogLine{RunID: run, StepID: "step.with.dots", Stream: StreamSystem, Text: "exit 0"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("late")); err == nil {
		t.Fatal("write after Close succeeded")
	}
	if err := ls.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"build/stdout: compiling", "build/stdout: linking done", "step.with.dots/system: exit 0", "build/stdout: partial"}
	lines, err := ls.Read(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	render := func(ls []LogLine) []string {
		var out []string
		for _, l := range ls {
			if l.RunID != run || l.Time.IsZero() {
				t.Errorf("line %+v", l)
			}
			out = append(out, l.StepID+"/"+l.Stream+": "+l.Text)
		}
		return out
	}
	if got := render(lines); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Read = %q, want %q", got, want)
	}

	var followed []LogLine
	for len(followed) < len(want) {
		select {
		case l := <-follow:
			followed = append(followed, l)
		case <-time.After(5 * time.Second):
			t.Fatalf("Follow delivered %d lines", len(followed))
		}
	}
	if got := render(followed); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Follow = %q, want %q", got, want)
	}
	// Live lines keep coming.
	if err := ls.Append(ctx, LogLine{RunID: run, StepID: "build", Text: "live"}); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-follow:
		if l.Text != "live" {
			t.Fatalf("followed %q", l.Text)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("live line not followed")
	}
	cancel()
	for range follow {
	}

	// Many concurrent appenders: every line arrives.
	const writers, per = 8, 200
	bulk := queue.NewRunID()
	done := make(chan struct{})
	for i := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := range per {
				if err := ls.Append(ctx, LogLine{RunID: bulk, StepID: fmt.Sprint("s", i), Text: fmt.Sprint(j)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range writers {
		<-done
	}
	if err := ls.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	lines, err = ls.Read(ctx, bulk)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != writers*per {
		t.Fatalf("read %d lines, want %d", len(lines), writers*per)
	}
	last := map[string]int{}
	for _, l := range lines { // each writer's lines in its order
		var n int
		fmt.Sscan(l.Text, &n)
		if prev, ok := last[l.StepID]; ok && n != prev+1 {
			t.Fatalf("step %s: line %d after %d", l.StepID, n, prev)
		}
		last[l.StepID] = n
	}
}

var (
	golden    = queuetest.Golden
	fixedTime = queuetest.FixedTime
)
