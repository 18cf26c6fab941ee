package decide

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// Re-runs (issue #17). A re-run is a new run of the workflow loaded now on
// the event of an earlier run: a new run id and record whose rerun_of
// names the earlier run, the earlier run's sticky comment as its own from
// the start, and the event's payload from the stored delivery. An
// operator's re-run (Rerun) is not subject to the workflow's `authorize`
// policy; a /retry comment's (Retry) is.

// RunLister lists run records (*stores.RunStore).
type RunLister interface {
	List(ctx context.Context, f stores.ListFilter) ([]*stores.RunRecord, string, error)
}

// Deliveries reads stored deliveries back (*stores.ReceivedStore).
type Deliveries interface {
	Get(ctx context.Context, forge workflows.Forge, id string) (*stores.Received, error)
}

var (
	// ErrWorkflowGone: the workflow of the run to re-run is no longer loaded.
	ErrWorkflowGone = errors.New("workflow is no longer loaded")
	// ErrRepoNotAllowed: the run's repository is no longer in allow_repos.
	ErrRepoNotAllowed = errors.New("repository not allowed (allow_repos)")
	// ErrNotFinished: only a finished run can be re-run.
	ErrNotFinished = errors.New("only a finished run can be re-run (cancel it first)")
)

// Rerun is the request that re-runs finished run rec for an operator (the
// API, the web UI's button). ErrNotFinished, ErrRepoNotAllowed (the
// repository has left allow_repos since) and ErrWorkflowGone say why not;
// any other error is the stored deliveries'.
func (d *Decider) Rerun(ctx context.Context, rec *stores.RunRecord) (*queue.RunRequest, error) {
	if !rec.Status.Terminal() {
		return nil, fmt.Errorf("run %s is %s: %w", rec.ID, rec.Status, ErrNotFinished)
	}
	if rec.Event.Repo != "" && !d.Allowed(rec.Event.Repo) {
		d.log.Info("re-run refused: repository not allowed", "run", rec.ID, "repo", rec.Event.Repo)
		return nil, fmt.Errorf("re-running run %s of %s: %w", rec.ID, rec.Event.Repo, ErrRepoNotAllowed)
	}
	req, err := d.rerunRequest(ctx, rec, "")
	if errors.Is(err, ErrWorkflowGone) {
		return nil, fmt.Errorf("workflow %q of run %s: %w", rec.Workflow, rec.ID, err)
	}
	return req, err
}

// rerunRequest builds the request that re-runs rec with the workflow loaded
// now (its digest may differ from rec's: the record of the re-run carries
// the new one). trigger is the delivery of the /retry comment that asks for
// it, "" for an operator's. The event is rec's, its payload read back from
// the stored delivery; one that expired leaves the event without it.
func (d *Decider) rerunRequest(ctx context.Context, rec *stores.RunRecord, trigger string) (*queue.RunRequest, error) {
	w := d.Workflow(rec.Workflow)
	if w == nil {
		return nil, fmt.Errorf("re-running run %s: %w: %s", rec.ID, ErrWorkflowGone, rec.Workflow)
	}
	ev := rec.Event
	origin := stores.OriginOf(rec)
	// A run started through the API (no event kind) has no delivery.
	if d.deps.Deliveries != nil && origin != "" && ev.Kind != "" {
		stored, err := d.deps.Deliveries.Get(ctx, ev.Forge, origin)
		switch {
		case err == nil:
			ev.Raw = stored.Raw
		case errors.Is(err, stores.ErrNotReceived):
			d.log.Warn("re-running without the event's payload: its delivery is no longer stored", "run", rec.ID, "delivery", origin)
		default:
			return nil, fmt.Errorf("re-running run %s: %w", rec.ID, err)
		}
	}
	id := queue.NewRunID()
	ev.DeliveryID = stores.RerunDelivery(origin, id, trigger)
	return &queue.RunRequest{
		V:              queue.WireVersion,
		ID:             id,
		Workflow:       w.Name,
		WorkflowDigest: w.Digest,
		Event:          ev,
		Attempt:        rec.Attempt + 1,
		CreatedAt:      d.now().UTC(),
		Params:         rec.Params,
		RerunOf:        rec.ID,
		CommentID:      rec.CommentID,
		Origin:         origin,
	}, nil
}

// Retry answers a /retry comment (CommandsConfig.Retry) on a pull request:
// the re-run requests of its failed runs whose workflow's `authorize`
// policy admits the commenter; the others are skipped with the reason.
// Its re-runs' delivery ids derive from the comment's, so a redelivery of
// the comment dedupes them. Any other event decides nothing.
func (d *Decider) Retry(ctx context.Context, ev *workflows.Event) (Decision, error) {
	cmd := d.cfg.Commands.RetryCommand()
	if cmd == "" || d.deps.Runs == nil || ev.PullRequest == nil {
		return Decision{}, nil
	}
	if _, ok := workflows.CommandOf(cmd, ev); !ok {
		return Decision{}, nil
	}
	recs, err := d.pullRequestRuns(ctx, ev.Forge, ev.Repo, ev.PullRequest.Number)
	if err != nil {
		return Decision{}, err
	}
	failed := failedRuns(recs, ev.DeliveryID)
	if len(failed) == 0 {
		return Decision{Skipped: []Skip{{cmd, fmt.Sprintf("no failed run on %s#%d to re-run", ev.Repo, ev.PullRequest.Number)}}}, nil
	}
	dec, err := d.rerunFailed(ctx, ev, failed, cmd)
	if err != nil {
		return Decision{}, err
	}
	for _, req := range dec.Runs {
		// One /retry comment re-runs each workflow once, whatever
		// delivery id it comes under (decide.go); the suffix keeps it
		// apart from a run of a `command: /retry` trigger of the same
		// workflow (objectKey's parts leave nothing after the last).
		req.Object = objectKey(ev, cmd) + "|retry"
	}
	return dec, nil
}

// rerunFailed decides the re-runs of failed, the runs delivery ev (a
// /retry comment, a rerequest) asks for: those whose workflow is still
// loaded and whose `authorize` policy admits ev's sender (authorizing);
// the others are skipped under label with the reason. Their delivery ids
// derive from ev's, so that a redelivery dedupes them.
func (d *Decider) rerunFailed(ctx context.Context, ev *workflows.Event, failed []*stores.RunRecord, label string) (Decision, error) {
	var dec Decision
	note := d.associate(ctx, ev)
	for _, rec := range failed {
		req, skip, err := d.rerunOne(ctx, ev, rec, label, note)
		switch {
		case err != nil:
			return Decision{}, err
		case req == nil:
			dec.Skipped = append(dec.Skipped, skip)
		default:
			dec.Runs = append(dec.Runs, req)
		}
	}
	return dec, nil
}

// rerunOne is the re-run of failed run rec that ev asks for, or why not
// (note: why ev's author association is unknown).
func (d *Decider) rerunOne(ctx context.Context, ev *workflows.Event, rec *stores.RunRecord, label, note string) (*queue.RunRequest, Skip, error) {
	w := d.Workflow(rec.Workflow)
	if w == nil {
		return nil, Skip{rec.Workflow, label + ": " + ErrWorkflowGone.Error()}, nil
	}
	if ok, reason := authorize(w, authorizing(ev, rec), note); !ok {
		d.log.Info("re-run refused by the workflow's authorize policy", "workflow", w.Name, "run", rec.ID, "sender", ev.Sender, "reason", reason)
		return nil, Skip{w.Name, label + " refused: " + reason}, nil
	}
	req, err := d.rerunRequest(ctx, rec, ev.DeliveryID)
	if err != nil {
		return nil, Skip{}, err
	}
	return req, Skip{}, nil
}

// authorizing is the event a re-run of rec asked for by ev is authorized
// on: a /retry comment itself; a rerequest, which names no pull request
// of its own, with rec's (whether the code it re-runs comes from a fork).
func authorizing(ev *workflows.Event, rec *stores.RunRecord) *workflows.Event {
	if ev.Kind != workflows.KindRerequest {
		return ev
	}
	a := *ev
	a.PullRequest = rec.Event.PullRequest
	return &a
}

// pullRequestRuns are the runs of one pull request, newest first, read
// from the run index by repository and number (stores.ListFilter.PR; the
// number is shared by issues and pull requests, so the event is checked).
func (d *Decider) pullRequestRuns(ctx context.Context, forge workflows.Forge, repo string, pr int) ([]*stores.RunRecord, error) {
	var out []*stores.RunRecord
	f := stores.ListFilter{Repo: repo, PR: pr, Limit: 1000}
	for {
		page, next, err := d.deps.Runs.List(ctx, f) // from the run index: only this pull request's runs
		if err != nil {
			return nil, fmt.Errorf("listing the runs of %s#%d: %w", repo, pr, err)
		}
		for _, r := range page {
			if r.Event.Forge == forge && r.Event.PullRequest != nil && r.Event.PullRequest.Number == pr {
				out = append(out, r)
			}
		}
		if next == "" {
			return out, nil
		}
		f.Cursor = next
	}
}

// failedRuns are the runs the /retry comment delivery trigger re-runs: of
// each workflow, the latest run on the pull request, if it failed. The
// re-runs trigger itself queued (seen again on its redelivery) do not
// count, so that the redelivery asks for the same re-runs, which its
// delivery keys then dedupe.
func failedRuns(recs []*stores.RunRecord, trigger string) []*stores.RunRecord {
	seen := map[string]bool{}
	var out []*stores.RunRecord
	for _, r := range recs { // newest first
		if seen[r.Workflow] || r.Event.DeliveryID == stores.RerunDelivery(stores.OriginOf(r), "", trigger) {
			continue
		}
		seen[r.Workflow] = true
		if r.Status == workflows.StatusFailed {
			out = append(out, r)
		}
	}
	return out
}

var (
	_ RunLister  = (*stores.RunStore)(nil)
	_ Deliveries = (*stores.ReceivedStore)(nil)
)

// Re-runs a forge asks for (workflows.KindRerequest: the Re-run button of
// a check run or a check suite). They re-run failed runs as a
// /retry comment does (above): of each workflow, the latest run on the
// head commit, if it failed; a check run's rerequest only the run it
// names (its external_id), a check suite's every one. Each is authorized
// by the workflow's `authorize` policy for the requester, whose role the
// forge's API tells (trust.go), on the re-run's own pull request (whether
// its code comes from a fork). No trigger takes a rerequest, so matching
// decides nothing for it.

// rerequestLabel names a rerequest where an answer lists what it skipped.
const rerequestLabel = "re-run request"

// maxHeadScan bounds the runs of a repository read to find those of a
// head commit no pull request is known for (a push, a fork's branch): its
// latest runs.
const maxHeadScan = 1000

// Reruns are the re-runs a delivery asks for: a forge's rerequest's
// (Rerequest), else a /retry comment's (Retry).
func (d *Decider) Reruns(ctx context.Context, ev *workflows.Event) (Decision, error) {
	if ev.Kind != workflows.KindRerequest {
		return d.Retry(ctx, ev)
	}
	return d.Rerequest(ctx, ev)
}

// Rerequest answers a forge's request to re-run (workflows.KindRerequest):
// of each workflow, the latest run on the head commit if it failed (a
// check run's only the run it names), authorized as rerunFailed says.
func (d *Decider) Rerequest(ctx context.Context, ev *workflows.Event) (Decision, error) {
	rq := ev.Rerequest
	switch {
	case rq == nil || rq.HeadSHA == "":
		return Decision{Skipped: []Skip{{rerequestLabel, "the request names no commit"}}}, nil
	case d.deps.Runs == nil:
		return Decision{Skipped: []Skip{{rerequestLabel, "this server keeps no run records to re-run"}}}, nil
	}
	recs, err := d.headRuns(ctx, ev.Forge, ev.Repo, rq)
	if err != nil {
		return Decision{}, err
	}
	failed := failedRuns(recs, ev.DeliveryID)
	if rq.RunID != "" {
		failed = slices.DeleteFunc(failed, func(r *stores.RunRecord) bool { return r.ID != rq.RunID })
	}
	if len(failed) == 0 {
		why := fmt.Sprintf("no failed run on %s of %s to re-run", rq.HeadSHA, ev.Repo)
		if rq.RunID != "" {
			why = fmt.Sprintf("run %s is not the latest run of its workflow on %s of %s, or did not fail", rq.RunID, rq.HeadSHA, ev.Repo)
		}
		return Decision{Skipped: []Skip{{rerequestLabel, why}}}, nil
	}
	return d.rerunFailed(ctx, ev, failed, rerequestLabel)
}

// headRuns are the runs of repo on forge whose head is rq.HeadSHA, newest
// first: read by pull request where the forge lists one (the run index
// has those by number), else among the repository's latest maxHeadScan
// runs.
func (d *Decider) headRuns(ctx context.Context, forge workflows.Forge, repo string, rq *workflows.Rerequest) ([]*stores.RunRecord, error) {
	var recs []*stores.RunRecord
	if len(rq.PullRequests) == 0 {
		page, _, err := d.deps.Runs.List(ctx, stores.ListFilter{Repo: repo, Limit: maxHeadScan})
		if err != nil {
			return nil, fmt.Errorf("listing the runs of %s: %w", repo, err)
		}
		recs = page
	}
	for _, n := range rq.PullRequests {
		rs, err := d.pullRequestRuns(ctx, forge, repo, n)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rs...)
	}
	recs = slices.DeleteFunc(recs, func(r *stores.RunRecord) bool { return r.Event.Forge != forge || runHead(r) != rq.HeadSHA })
	slices.SortStableFunc(recs, func(a, b *stores.RunRecord) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return slices.CompactFunc(recs, func(a, b *stores.RunRecord) bool { return a.ID == b.ID }), nil
}

// runHead is the commit a run checked out and reported on: the one it
// resolved, else its event's.
func runHead(r *stores.RunRecord) string {
	if r.HeadSHA != "" {
		return r.HeadSHA
	}
	return r.Event.HeadSHA()
}
