package decide

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// Workflows gives the workflows to decide by. It is called once per
// event, so it must be cheap and safe for concurrent use.
// *workflows.WorkflowSet satisfies it.
type Workflows interface {
	Workflows() []*workflows.Workflow
}

// Forges are the forges whose APIs tell what payloads leave out: a pull
// request's head, a change's files, an author's role. *forge.Registry
// satisfies it (a forge it does not hold answers forge.ErrNotConfigured).
type Forges interface {
	Get(name workflows.Forge) forge.Forge
}

// Deps are what a Decider reads. Workflows is required; a nil optional
// field turns off what needs it.
type Deps struct {
	// Workflows are the loaded workflows.
	Workflows Workflows
	// Forges look up heads, changed files and associations. nil: no
	// forge is asked (heads unknown, files unknown, associations NONE).
	Forges Forges
	// Heads remembers pull request heads from pull_request events
	// (*stores.HeadStore). nil: a comment's head comes from its forge's
	// API alone.
	Heads HeadStore
	// Runs are the run records a /retry comment selects failed runs from
	// (*stores.RunStore). nil: /retry is not answered.
	Runs RunLister
	// Deliveries are the stored deliveries a re-run reads its event's
	// payload back from (*stores.ReceivedStore). nil: re-runs carry no
	// payload.
	Deliveries Deliveries
	// Logger; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Decider decides which workflows an event runs. Safe for concurrent use.
type Decider struct {
	cfg   Config
	deps  Deps
	log   *slog.Logger
	now   func() time.Time
	assoc *assocCache // authors' associations looked up (trust.go)
}

// New builds a Decider; cfg is defaulted and validated.
func New(cfg Config, deps Deps) (*Decider, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validating decide config: %w", err)
	}
	if deps.Workflows == nil {
		return nil, errors.New("creating decider: no workflow source")
	}
	if deps.Forges == nil {
		deps.Forges = (*forge.Registry)(nil) // every forge not configured
	}
	deps.Logger = cmp.Or(deps.Logger, slog.New(slog.DiscardHandler))
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Decider{cfg: cfg, deps: deps, log: deps.Logger, now: deps.Now, assoc: newAssocCache(cfg.Trust.AssociationTTL)}, nil
}

// Skip is a workflow that does not run an event, and why. Workflow is ""
// for an entry that counts several command lines past the limit.
type Skip struct {
	Workflow string `json:"workflow"`
	Reason   string `json:"reason"`
}

// Decision is what an event runs: a request per run, in workflow order,
// and a reason for each workflow that does not run it.
type Decision struct {
	Runs    []*queue.RunRequest
	Skipped []Skip
	// Refused are the skipped workflows that matched but whose authorize
	// policy refused the event (the stored delivery's decisions).
	Refused []string
	// RerunSkipped are the entries of Skipped a /retry comment's or a
	// rerequest's re-runs added: what was asked to re-run and was not.
	RerunSkipped []Skip
}

// Reason summarizes why a decision has no run.
func (d Decision) Reason() string {
	if len(d.Skipped) == 0 {
		return "no workflow is loaded"
	}
	return "no workflow matched and authorized the event (" + d.Skips() + ")"
}

// Skips lists the skipped workflows as "workflow: reason; ...".
func (d Decision) Skips() string {
	parts := make([]string, len(d.Skipped))
	for i, k := range d.Skipped {
		parts[i] = k.Workflow + ": " + k.Reason
	}
	return strings.Join(parts, "; ")
}

func (d *Decision) add(o Decision) {
	d.Runs = append(d.Runs, o.Runs...)
	d.Skipped = append(d.Skipped, o.Skipped...)
	d.Refused = append(d.Refused, o.Refused...)
}

// Allowed applies Config.AllowRepos (empty: every repository).
func (d *Decider) Allowed(repo string) bool {
	return len(d.cfg.AllowRepos) == 0 || workflows.AnyRepo(d.cfg.AllowRepos, repo)
}

// Workflow is the loaded workflow of that name, nil if none.
func (d *Decider) Workflow(name string) *workflows.Workflow {
	for _, w := range d.deps.Workflows.Workflows() {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// Event decides what a webhook's event runs: the runs of the workflows
// that match and authorize it (match.go), then the re-runs a /retry
// comment or a forge's rerequest asks for (retry.go). The
// error is the run records' (the runs to re-run could not be listed).
func (d *Decider) Event(ctx context.Context, ev *workflows.Event) (Decision, error) {
	dec := d.match(ctx, ev)
	reruns, err := d.Reruns(ctx, ev)
	if err != nil {
		return Decision{}, err
	}
	if ev.Kind == workflows.KindRerequest {
		// What matching said of each workflow ("no trigger for event
		// rerequest") says nothing here.
		dec.Skipped = nil
	}
	dec.add(reruns)
	dec.RerunSkipped = reruns.Skipped
	return dec, nil
}

// Replay decides what stored delivery original, normalized again as ev
// under its replay's delivery id, runs now: as Event, each new run
// remembering original as its origin. The operator asked for new runs, so
// none dedupes by the original's objects.
func (d *Decider) Replay(ctx context.Context, ev *workflows.Event, original string) (Decision, error) {
	dec, err := d.Event(ctx, ev)
	if err != nil {
		return Decision{}, err
	}
	for _, r := range dec.Runs {
		if r.RerunOf == "" { // a re-run's origin is its run's
			r.Origin = original
		}
		r.Object = ""
	}
	return dec, nil
}

// newRunRequest builds the run request of one match. The event is copied so
// that each run carries its own CommandArgs.
func (d *Decider) newRunRequest(w *workflows.Workflow, ev *workflows.Event, commandArgs string) *queue.RunRequest {
	e := *ev
	e.CommandArgs = commandArgs
	return &queue.RunRequest{
		V:              queue.WireVersion,
		ID:             queue.NewRunID(),
		Workflow:       w.Name,
		WorkflowDigest: w.Digest,
		Event:          e,
		Attempt:        1,
		CreatedAt:      d.now().UTC(),
	}
}

// Start is the request of an operator's run of workflow w (the API's POST
// /api/v1/workflows/{name}/runs) with params, on repository repo of forge:
// no event, no pull request, a delivery id of its own. The caller has
// checked the params (workflows.Workflow.SetParams) and the repository
// (Allowed).
func Start(w *workflows.Workflow, forge workflows.Forge, repo string, params map[string]string) *queue.RunRequest {
	id := queue.NewRunID()
	return &queue.RunRequest{ID: id, Workflow: w.Name, WorkflowDigest: w.Digest, Params: params,
		Event: workflows.Event{Forge: forge, Repo: repo, DeliveryID: "api-" + id}}
}

var (
	_ Workflows = (*workflows.WorkflowSet)(nil)
	_ Forges    = (*forge.Registry)(nil)
)

// Object dedupe (issue #24). A delivery id is the forge's name for one
// sending of an event, not for the event: a captured signed body re-sent
// under a new delivery id, or one event sent by two hooks, would start
// its runs again. So every run a webhook starts also carries what the
// forge's object and its version are (queue.RunRequest.Object), which the
// queue dedupes in hookrun_deliveries beside the delivery key, in the same
// round trip and for the same DeliveryTTL: the same object under another
// delivery id answers 202 with the runs it started (PublishResult.SameObject).
//
// The object of an event (objectKey), by kind, always with the forge and
// the repository:
//   - comment: the pull request or issue number, the comment's id, action
//     and updated_at, and the command line the run is for (one run per
//     distinct command line of a comment);
//   - pull_request: the number, action, head SHA, updated_at, the label of
//     labeled/unlabeled and the user of assigned/review_requested (the
//     forge sends one event each, in the same second);
//   - issue: the number, action, updated_at, label and user likewise;
//   - push: the ref and the SHAs before and after.
//
// Every part is what the forge states; a new event about the object (a
// new head, an edit, another label) differs in one of them. Runs that are
// not a webhook's own dedupe by delivery id alone: an operator's replay
// (POST /api/v1/deliveries/{id}/replay) is a deliberate new run, as are
// re-runs, API starts and schedules; a /retry comment's re-runs are keyed
// by the comment (one /retry comment re-runs each workflow once).

// objectKey is the object and version of ev, for the run of command line
// line ("" for a run without a command): "" when ev has none (a chat
// command), which leaves that run to its delivery key.
func objectKey(ev *workflows.Event, line string) string {
	var b strings.Builder
	b.Grow(128 + len(ev.Repo) + len(ev.UpdatedAt) + len(line)) // one allocation for most keys
	part := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	part(string(ev.Kind))
	part(ev.Repo)
	switch ev.Kind {
	case workflows.KindComment:
		if ev.Comment == nil {
			return ""
		}
		part(strconv.Itoa(ev.Number()))
		part(strconv.FormatInt(ev.Comment.ID, 10))
		part(ev.Action)
		part(ev.UpdatedAt)
		if ev.Comment.ID == 0 {
			// A review some forges send names no id: its text tells it apart.
			part(ev.Comment.Body)
		}
		part(line)
	case workflows.KindPullRequest, workflows.KindIssue:
		part(strconv.Itoa(ev.Number()))
		part(ev.Action)
		if ev.PullRequest != nil {
			part(ev.PullRequest.HeadSHA)
		}
		part(ev.UpdatedAt)
		part(ev.Label)
		part(ev.Target)
		part(strings.Join(ev.Labels, "\n"))
	case workflows.KindPush:
		if ev.Push == nil {
			return ""
		}
		part(ev.Push.Ref)
		part(ev.Push.Before)
		part(ev.Push.After)
	default:
		return ""
	}
	return b.String()
}

// MaxListedSkips is how many command lines past the limit the answer
// names one by one; the rest are counted in one entry.
const MaxListedSkips = 20

// commandBudget admits at most max distinct command lines of one comment
// (across every workflow that takes them, in workflow and then comment
// order) and collects the lines past it for the answer.
type commandBudget struct {
	max      int
	admitted []string
	over     int
	skips    []Skip
}

// admit reports whether workflow's run of line may start.
func (b *commandBudget) admit(workflow, line string) bool {
	if slices.Contains(b.admitted, line) {
		return true
	}
	if len(b.admitted) < b.max {
		b.admitted = append(b.admitted, line)
		return true
	}
	b.over++
	if len(b.skips) < MaxListedSkips {
		b.skips = append(b.skips, Skip{workflow, fmt.Sprintf("command line %q not run: a comment starts at most %d distinct command lines (commands.max_per_comment)",
			truncate(line, 80), b.max)})
	}
	return false
}

// skipped is what the answer lists of the lines past the limit.
func (b *commandBudget) skipped() []Skip {
	out := b.skips
	if n := b.over - len(b.skips); n > 0 {
		out = append(out, Skip{"", fmt.Sprintf("%d more command lines not run: a comment starts at most %d distinct command lines (commands.max_per_comment)", n, b.max)})
	}
	return out
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
