package sticky

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

var errNotFound = errors.New("404 Not Found")

// memForge is a thread of comments in memory, paged like the forges' APIs
// (page 0 or 1 is the first), that records every call.
type memForge struct {
	pageSize int
	editErr  error // returned by every Edit when set

	mu       sync.Mutex
	nextID   int64
	comments []*memComment
	calls    []string
}

type memComment struct {
	ID   int64
	Body string
	Ours bool
}

func (f *memForge) String() string { return "acme/widget#7" }

func (f *memForge) add(ours bool, body string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.comments = append(f.comments, &memComment{ID: f.nextID, Body: body, Ours: ours})
	return f.nextID
}

func (f *memForge) log(format string, a ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
}

func (f *memForge) Edit(_ context.Context, id int64, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("edit %d", id)
	if f.editErr != nil {
		return fmt.Errorf("editing %d: %w", id, f.editErr)
	}
	for _, c := range f.comments {
		if c.ID == id {
			if !c.Ours {
				return fmt.Errorf("editing %d: 403 Forbidden", id)
			}
			c.Body = body
			return nil
		}
	}
	return fmt.Errorf("editing %d: %w", id, errNotFound)
}

func (f *memForge) List(_ context.Context, page int) ([]Comment, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("list %d", page)
	page = max(page, 1)
	lo, hi := min((page-1)*f.pageSize, len(f.comments)), min(page*f.pageSize, len(f.comments))
	var out []Comment
	for _, c := range f.comments[lo:hi] {
		out = append(out, Comment{ID: c.ID, Body: c.Body, Ours: c.Ours})
	}
	next := 0
	if hi < len(f.comments) {
		next = page + 1
	}
	return out, next, nil
}

func (f *memForge) Create(_ context.Context, body string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.comments = append(f.comments, &memComment{ID: f.nextID, Body: body, Ours: true})
	f.log("create %d", f.nextID)
	return f.nextID, nil
}

func (f *memForge) IsNotFound(err error) bool { return errors.Is(err, errNotFound) }

func (f *memForge) allCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// body is a comment as render.Comment writes it: workflow marker, run marker.
func body(workflow, runID, text string) string {
	return render.Marker(workflow) + "\n" + render.RunMarker(runID) + "\n" + text
}

func report(runID string, phase contract.Phase, attempt int, ref int64) *contract.RunReport {
	return &contract.RunReport{RunID: runID, Attempt: attempt, Phase: phase, Ref: contract.ReportRef{CommentID: ref},
		Workflow: &workflows.Workflow{Name: "review"}}
}

func TestWrite(t *testing.T) {
	cases := []struct {
		name    string
		seed    []memComment // ids are 1, 2, ... in order
		pageSz  int
		editErr error
		mode    string
		rep     *contract.RunReport
		want    int64 // id written; with wantErr, the id returned beside the error
		calls   []string
		wantErr string
	}{
		{
			name: "ref known",
			seed: []memComment{{Ours: true, Body: body("review", "run-1", "old")}},
			mode: workflows.CommentSticky, rep: report("run-1", contract.PhaseProgress, 1, 1),
			want: 1, calls: []string{"edit 1"},
		},
		{
			name: "ref 404 then marker found",
			seed: []memComment{{Ours: true, Body: body("lint", "run-0", "other workflow")}, {Ours: true, Body: body("review", "run-0", "previous run")}},
			mode: workflows.CommentSticky, rep: report("run-1", contract.PhaseStart, 2, 99),
			want: 2, calls: []string{"edit 99", "list 0", "edit 2"},
		},
		{
			name: "marker on page 2 among humans' comments",
			seed: []memComment{
				{Ours: false, Body: "LGTM"},
				{Ours: false, Body: body("review", "run-0", "a human quoting the bot")},
				{Ours: true, Body: body("lint", "run-0", "other workflow")},
				{Ours: false, Body: "ping"},
				{Ours: true, Body: body("review", "run-0", "ours")},
			},
			pageSz: 3, mode: workflows.CommentSticky, rep: report("run-1", contract.PhaseStart, 1, 0),
			want: 5, calls: []string{"list 0", "list 2", "edit 5"},
		},
		{
			name: "new mode first start creates beside the workflow's other comments",
			seed: []memComment{{Ours: true, Body: body("review", "run-0", "earlier run")}},
			mode: workflows.CommentNew, rep: report("run-1", contract.PhaseStart, 1, 0),
			want: 2, calls: []string{"create 2"},
		},
		{
			name: "new mode later attempt finds the run's own comment",
			seed: []memComment{{Ours: true, Body: body("review", "run-0", "earlier run")}, {Ours: true, Body: body("review", "run-1", "attempt 1")}},
			mode: workflows.CommentNew, rep: report("run-1", contract.PhaseStart, 2, 0),
			want: 2, calls: []string{"list 0", "edit 2"},
		},
		{
			name: "new mode final without ref finds the run's own comment",
			seed: []memComment{{Ours: false, Body: body("review", "run-1", "a human's copy")}, {Ours: true, Body: body("review", "run-1", "attempt 1")}},
			mode: workflows.CommentNew, rep: report("run-1", contract.PhaseFinal, 1, 0),
			want: 2, calls: []string{"list 0", "edit 2"},
		},
		{
			name: "create when only humans carry the marker",
			seed: []memComment{{Ours: false, Body: body("review", "run-0", "quoted")}},
			mode: workflows.CommentSticky, rep: report("run-1", contract.PhaseStart, 1, 0),
			want: 2, calls: []string{"list 0", "create 2"},
		},
		{
			name: "edit error other than 404 is returned with the id",
			seed: []memComment{{Ours: true, Body: body("review", "run-1", "old")}}, editErr: errors.New("502 Bad Gateway"),
			mode: workflows.CommentSticky, rep: report("run-1", contract.PhaseProgress, 1, 1),
			want: 1, calls: []string{"edit 1"}, wantErr: "502",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &memForge{pageSize: 100}
			if tc.pageSz > 0 {
				f.pageSize = tc.pageSz
			}
			for _, c := range tc.seed {
				f.add(c.Ours, c.Body)
			}
			f.editErr = tc.editErr
			before := make(map[int64]string)
			for _, c := range f.comments {
				before[c.ID] = c.Body
			}
			var w Writer
			const text = "the new body"
			id, err := w.Write(context.Background(), f, tc.rep, tc.mode, body("review", tc.rep.RunID, text))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if id != tc.want {
				t.Errorf("id %d, want %d", id, tc.want)
			}
			if got := f.allCalls(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			for _, c := range f.comments {
				wrote := c.ID == tc.want && tc.wantErr == ""
				switch {
				case wrote && !strings.HasSuffix(c.Body, text):
					t.Errorf("comment %d not written: %q", c.ID, c.Body)
				case !wrote && c.Body != before[c.ID]:
					t.Errorf("comment %d changed: %q", c.ID, c.Body)
				}
			}
		})
	}
}

// TestWriterRemembers: a run's comment id is remembered between its reports
// (no search, no second comment) and forgotten after the final one.
func TestWriterRemembers(t *testing.T) {
	f := &memForge{pageSize: 100}
	var w Writer
	ctx := context.Background()
	b := body("review", "run-1", "x")
	id, err := w.Write(ctx, f, report("run-1", contract.PhaseStart, 1, 0), workflows.CommentSticky, b)
	if err != nil || id != 1 {
		t.Fatalf("start: %d %v", id, err)
	}
	if got := w.known("run-1", "review"); got != id {
		t.Errorf("remembered %d after start, want %d", got, id)
	}
	for _, p := range []contract.Phase{contract.PhaseProgress, contract.PhaseFinal} {
		if got, err := w.Write(ctx, f, report("run-1", p, 1, 0), workflows.CommentSticky, b); err != nil || got != id {
			t.Fatalf("%s: %d %v", p, got, err)
		}
	}
	want := []string{"list 0", "create 1", "edit 1", "edit 1"}
	if got := f.allCalls(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	if got := w.known("run-1", "review"); got != 0 {
		t.Errorf("still remembered %d after the final report", got)
	}
	// A comment found or created by a final report is not remembered either.
	if _, err := w.Write(ctx, f, report("run-2", contract.PhaseFinal, 1, 0), workflows.CommentSticky, b); err != nil {
		t.Fatal(err)
	}
	if got := w.known("run-2", "review"); got != 0 {
		t.Errorf("final report remembered %d", got)
	}
}

// TestConcurrentFindOrCreate: two reports of one workflow on one thread
// racing without a Ref create one comment between them.
func TestConcurrentFindOrCreate(t *testing.T) {
	f := &memForge{pageSize: 100}
	var w Writer
	ids := make([]int64, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := w.Write(context.Background(), f, report(fmt.Sprintf("run-%d", i), contract.PhaseStart, 1, 0),
				workflows.CommentSticky, body("review", "run", "x"))
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	if len(f.comments) != 1 {
		t.Fatalf("%d comments created, want 1", len(f.comments))
	}
	for i, id := range ids {
		if id != f.comments[0].ID {
			t.Errorf("report %d wrote %d, want %d", i, id, f.comments[0].ID)
		}
	}
}
