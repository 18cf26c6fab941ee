// Package sticky writes a run's comment on a pull/merge request or issue the
// way both forge reporters do: edit the comment the run record or this
// process knows; if it is gone (404), look again; for `report.comment:
// sticky` find the workflow's comment by its marker among the bot's own
// comments, for `new` on a later attempt the run's own comment by its run
// marker; else create one. Each forge only adapts its API to Forge.
package sticky

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"

	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// maxPages bounds the search through a thread's comments.
const maxPages = 100

// stripes is how many locks the find-or-create of different threads and
// workflows spreads over.
const stripes = 64

// Forge is the comments of one pull/merge request or issue on one forge.
type Forge interface {
	// String names the thread ("owner/repo#12"); comments of one workflow on
	// one thread are searched for and created one at a time.
	String() string
	// Edit replaces the body of comment id.
	Edit(ctx context.Context, id int64, body string) error
	// List returns one page of the thread's comments, oldest first, and the
	// page that follows (0 after the last). page is 0 for the first page,
	// else a next value List returned.
	List(ctx context.Context, page int) (comments []Comment, next int, err error)
	// Create adds a comment and returns its id.
	Create(ctx context.Context, body string) (int64, error)
	// IsNotFound reports whether err (from Edit) says the comment is gone.
	IsNotFound(err error) bool
}

// Comment is one comment as List sees it.
type Comment struct {
	ID   int64
	Body string
	// Ours is whether the bot wrote it (any user comment when the bot cannot
	// be learned); only ours are ever edited.
	Ours bool
}

// Writer writes runs' comments and remembers each run's comment id (per
// workflow) until its final report. The zero value is ready; it is safe for
// concurrent use by many runs.
type Writer struct {
	// Log receives the "comment gone" fallback; nil = slog.Default().
	Log *slog.Logger
	// Forge names the forge in log messages (its Name).
	Forge string
	// Noun is what the forge calls a comment ("comment", "note"), for log
	// messages.
	Noun string

	mu    sync.Mutex
	ids   map[string]int64    // run id + workflow → comment id, until the final report
	locks [stripes]sync.Mutex // striped by thread and workflow: one find-or-create at a time
}

// Write writes body as the comment of rep's run in mode (workflows.CommentSticky
// or workflows.CommentNew) and returns its id: the one rep.Ref or this Writer
// knows, else (sticky) the workflow's comment found by its marker among the
// bot's comments, else (new, after the first start) the run's own comment,
// else a new one. The id is returned whenever one is known, also with an
// error.
func (w *Writer) Write(ctx context.Context, f Forge, rep *contract.RunReport, mode, body string) (int64, error) {
	key := rep.RunID + "\x00" + rep.Workflow.Name
	final := rep.Phase == contract.PhaseFinal
	if final {
		defer w.forget(key)
	}

	id := rep.Ref.CommentID
	if id == 0 {
		w.mu.Lock()
		id = w.ids[key]
		w.mu.Unlock()
	}
	if id != 0 {
		err := f.Edit(ctx, id, body)
		if err == nil || !f.IsNotFound(err) {
			return id, err
		}
		w.log().Warn(w.Forge+" "+w.Noun+" gone, looking for it again", "run", rep.RunID, w.Noun, id)
	}

	lock := &w.locks[stripe(f.String()+"/"+rep.Workflow.Name)]
	lock.Lock()
	defer lock.Unlock()

	var match func(body string) bool
	switch {
	case mode == workflows.CommentSticky:
		match = func(b string) bool { return render.HasMarker(b, rep.Workflow.Name) }
	case rep.Phase != contract.PhaseStart || rep.Attempt > 1:
		match = func(b string) bool {
			return render.HasMarker(b, rep.Workflow.Name) && render.HasRunMarker(b, rep.RunID)
		}
	}
	if match != nil {
		found, err := find(ctx, f, match)
		if err != nil {
			return 0, err
		}
		if found != 0 {
			w.remember(key, found, final)
			return found, f.Edit(ctx, found, body)
		}
	}
	id, err := f.Create(ctx, body)
	if err != nil {
		return 0, err
	}
	w.remember(key, id, final)
	return id, nil
}

// find pages through the thread and returns the id of the first of our
// comments whose body matches; 0 when there is none.
func find(ctx context.Context, f Forge, match func(string) bool) (int64, error) {
	page := 0
	for range maxPages {
		list, next, err := f.List(ctx, page)
		if err != nil {
			return 0, err
		}
		for _, c := range list {
			if c.Ours && match(c.Body) {
				return c.ID, nil
			}
		}
		if next == 0 {
			break
		}
		page = next
	}
	return 0, nil
}

func (w *Writer) remember(key string, id int64, final bool) {
	if final {
		return
	}
	w.mu.Lock()
	if w.ids == nil {
		w.ids = map[string]int64{}
	}
	w.ids[key] = id
	w.mu.Unlock()
}

func (w *Writer) forget(key string) {
	w.mu.Lock()
	delete(w.ids, key)
	w.mu.Unlock()
}

// known reports the id remembered for a run's workflow (0 = none); for tests.
func (w *Writer) known(runID, workflow string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ids[runID+"\x00"+workflow]
}

func (w *Writer) log() *slog.Logger {
	if w.Log == nil {
		return slog.Default()
	}
	return w.Log
}

func stripe(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % stripes)
}
