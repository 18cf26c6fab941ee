package ingress

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// Re-runs and replays (issue #17). A re-run is a new run of the workflow
// loaded now on the event of an earlier run: a new run id and record whose
// rerun_of names the earlier run (which gets the new id in reruns), the
// earlier run's sticky comment as its own from the start (the reporter
// edits it), and the event's payload from the stored delivery. A replay
// matches a stored delivery again against the workflows loaded now, under
// a new delivery id (queue.ReplayDelivery), so that the original's
// delivery keys do not dedupe it.

// RunRecords is what re-runs read and link run records through
// (*queue.RunStore).
type RunRecords interface {
	Get(ctx context.Context, id string) (*queue.RunRecord, uint64, error)
	List(ctx context.Context, f queue.ListFilter) ([]*queue.RunRecord, string, error)
	LinkRerun(ctx context.Context, id, rerun string) error
}

// Deliveries is the store of accepted deliveries (*queue.ReceivedStore).
type Deliveries interface {
	Get(ctx context.Context, forge workflows.Forge, id string) (*queue.Received, error)
	NextReplay(ctx context.Context, forge workflows.Forge, id string) (int, error)
}

// deliveryAcceptor is a Publisher that also stores each accepted delivery
// (*queue.Queue). Without one, deliveries are not stored and cannot be
// replayed.
type deliveryAcceptor interface {
	AcceptDelivery(ctx context.Context, d *queue.Received, reqs []*queue.RunRequest) ([]queue.PublishResult, error)
}

// storesOf finds the run records and stored deliveries beside a publisher
// that has them (*queue.Queue).
func storesOf(pub Publisher) (RunRecords, Deliveries) {
	q, ok := pub.(interface {
		Runs() *queue.RunStore
		Received() *queue.ReceivedStore
	})
	if !ok || q.Runs() == nil || q.Received() == nil {
		return nil, nil
	}
	return q.Runs(), q.Received()
}

// errWorkflowGone: the workflow of the run to re-run is no longer loaded.
var errWorkflowGone = errors.New("workflow is no longer loaded")

// workflow is the loaded workflow of that name, nil if none.
func (s *Server) workflow(name string) *workflows.Workflow {
	for _, w := range s.src.Workflows() {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// rerunRequest builds the request that re-runs rec with the workflow loaded
// now (its digest may differ from rec's: the record of the re-run carries
// the new one). trigger is the delivery of the /retry comment that asks for
// it, "" for the API. The event is rec's, its payload read back from the
// stored delivery; one that expired leaves the event without it.
func (s *Server) rerunRequest(ctx context.Context, rec *queue.RunRecord, trigger string) (*queue.RunRequest, error) {
	w := s.workflow(rec.Workflow)
	if w == nil {
		return nil, fmt.Errorf("re-running run %s: %w: %s", rec.ID, errWorkflowGone, rec.Workflow)
	}
	ev := rec.Event
	origin := queue.OriginOf(rec)
	// A run started through the API (no event kind) has no delivery.
	if s.deliveries != nil && origin != "" && ev.Kind != "" {
		d, err := s.deliveries.Get(ctx, ev.Forge, origin)
		switch {
		case err == nil:
			ev.Raw = d.Raw
		case errors.Is(err, queue.ErrNotReceived):
			s.logger.Warn("re-running without the event's payload: its delivery is no longer stored", "run", rec.ID, "delivery", origin)
		default:
			return nil, fmt.Errorf("re-running run %s: %w", rec.ID, err)
		}
	}
	id := queue.NewRunID()
	ev.DeliveryID = queue.RerunDelivery(origin, id, trigger)
	return &queue.RunRequest{
		V:              queue.WireVersion,
		ID:             id,
		Workflow:       w.Name,
		WorkflowDigest: w.Digest,
		Event:          ev,
		Attempt:        rec.Attempt + 1,
		CreatedAt:      s.now().UTC(),
		Params:         rec.Params,
		RerunOf:        rec.ID,
		CommentID:      rec.CommentID,
		Origin:         origin,
	}, nil
}

// pullRequestRuns are the runs of one pull request, newest first, read
// from the run index by repository and number (queue.ListFilter.PR; the
// number is shared by issues and pull requests, so the event is checked).
func (s *Server) pullRequestRuns(ctx context.Context, forge workflows.Forge, repo string, pr int) ([]*queue.RunRecord, error) {
	var out []*queue.RunRecord
	f := queue.ListFilter{Repo: repo, PR: pr, Limit: 1000}
	for {
		page, next, err := s.records.List(ctx, f) // from the run index: only this pull request's runs
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
func failedRuns(recs []*queue.RunRecord, trigger string) []*queue.RunRecord {
	seen := map[string]bool{}
	var out []*queue.RunRecord
	for _, r := range recs { // newest first
		if seen[r.Workflow] || r.Event.DeliveryID == queue.RerunDelivery(queue.OriginOf(r), "", trigger) {
			continue
		}
		seen[r.Workflow] = true
		if r.Status == workflows.StatusFailed {
			out = append(out, r)
		}
	}
	return out
}

// retries answers a /retry comment (CommandsConfig.Retry) on a pull
// request: the re-run requests of its failed runs whose workflow's
// `authorize` policy admits the commenter; the others are noted in
// resp.Skipped with the reason. Its re-runs' delivery ids derive from the
// comment's, so a redelivery of the comment dedupes them.
func (s *Server) retries(ctx context.Context, ev *workflows.Event, resp *response) ([]*queue.RunRequest, error) {
	cmd := s.cfg.Commands.retryCommand()
	if cmd == "" || s.records == nil || ev.PullRequest == nil {
		return nil, nil
	}
	if _, ok := workflows.CommandOf(cmd, ev); !ok {
		return nil, nil
	}
	recs, err := s.pullRequestRuns(ctx, ev.Forge, ev.Repo, ev.PullRequest.Number)
	if err != nil {
		return nil, err
	}
	failed := failedRuns(recs, ev.DeliveryID)
	if len(failed) == 0 {
		resp.Skipped = append(resp.Skipped, skipped{cmd, fmt.Sprintf("no failed run on %s#%d to re-run", ev.Repo, ev.PullRequest.Number)})
		return nil, nil
	}
	note := s.associate(ctx, ev)
	var reqs []*queue.RunRequest
	for _, rec := range failed {
		w := s.workflow(rec.Workflow)
		if w == nil {
			resp.Skipped = append(resp.Skipped, skipped{rec.Workflow, cmd + ": " + errWorkflowGone.Error()})
			continue
		}
		if ok, reason := authorize(w, ev); !ok {
			if note != "" {
				reason += " (" + note + ")"
			}
			s.logger.Info("re-run refused by the workflow's authorize policy", "workflow", w.Name, "run", rec.ID, "sender", ev.Sender, "reason", reason)
			resp.Skipped = append(resp.Skipped, skipped{w.Name, cmd + " refused: " + reason})
			continue
		}
		req, err := s.rerunRequest(ctx, rec, ev.DeliveryID)
		if err != nil {
			return nil, err
		}
		// One /retry comment re-runs each workflow once, whatever
		// delivery id it comes under (dedupe.go); the suffix keeps it
		// apart from a run of a `command: /retry` trigger of the same
		// workflow (objectKey's parts leave nothing after the last).
		req.Object = objectKey(ev, cmd) + "|retry"
		reqs = append(reqs, req)
	}
	return reqs, nil
}

// linkReruns notes each re-run on the run it re-runs (the other direction
// of its record's rerun_of). A failure is logged: the re-run is queued.
func (s *Server) linkReruns(ctx context.Context, reqs []*queue.RunRequest, results []queue.PublishResult) {
	if s.records == nil {
		return
	}
	for i, r := range reqs {
		if r.RerunOf == "" || results[i].SameObject {
			// Another delivery's run of the same /retry: linked by it.
			continue
		}
		if err := s.records.LinkRerun(ctx, r.RerunOf, results[i].RunID); err != nil {
			s.logger.Error("linking a re-run to its run", "run", r.RerunOf, "rerun", results[i].RunID, "err", err)
		}
	}
}

// accept persists a delivery, all or nothing: its runs, and the delivery
// itself (stored for replays) when the publisher stores deliveries. d nil
// stores only the runs.
func (s *Server) accept(ctx context.Context, d *queue.Received, reqs []*queue.RunRequest) ([]queue.PublishResult, error) {
	if s.acceptor == nil || d == nil {
		if len(reqs) == 0 {
			return nil, nil
		}
		return s.publishAll(ctx, reqs)
	}
	results, err := s.acceptor.AcceptDelivery(ctx, d, reqs)
	if err != nil {
		return nil, fmt.Errorf("persisting the delivery and its %d runs: %w", len(reqs), err)
	}
	if err := checkResults(reqs, results); err != nil {
		return nil, err
	}
	return results, nil
}

// replayAnswer is the body of POST /api/v1/deliveries/{id}/replay.
type replayAnswer struct {
	response
	ReplayOf string `json:"replay_of"`
}

// replay matches stored delivery id of forge again against the workflows
// loaded now and queues what matches (a /retry command in it included).
func (s *Server) replay(ctx context.Context, forge workflows.Forge, id string) (replayAnswer, error) {
	if s.deliveries == nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, queue.ErrNotReceived)
	}
	d, err := s.deliveries.Get(ctx, forge, id)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	n, err := s.deliveries.NextReplay(ctx, forge, id)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	rid := queue.ReplayDelivery(id, n)
	ans := replayAnswer{response: response{Delivery: rid, Runs: []runRef{}}, ReplayOf: id}
	ev, drift, err := normalizeTolerant(s.cfg.Forges.Get(forge), d.Event, d.Raw, rid)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	ans.Drift = drift
	if !s.repoAllowed(ev.Repo) {
		ans.Ignored = ignoredNotAllowed
		return ans, nil
	}
	reqs := s.decide(ctx, ev, &ans.response)
	for _, r := range reqs {
		r.Origin = id
	}
	more, err := s.retries(ctx, ev, &ans.response)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	reqs = append(reqs, more...)
	// The operator asked for new runs: the original's objects must not
	// map them to its runs.
	withoutObjects(reqs)
	if len(reqs) == 0 {
		ans.Reason = noRunReason(ans.Skipped)
		return ans, nil
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PublishTimeout)
	defer cancel()
	results, err := s.publishAll(pctx, reqs)
	if err != nil {
		return replayAnswer{}, fmt.Errorf("replaying delivery %s: %w", id, err)
	}
	s.linkReruns(pctx, reqs, results)
	for i, r := range results {
		ans.Runs = append(ans.Runs, runRef{ID: r.RunID, Workflow: reqs[i].Workflow, RerunOf: reqs[i].RerunOf})
	}
	s.logger.Info("delivery replayed", "forge", forge, "delivery", id, "replay", rid, "runs", len(ans.Runs))
	return ans, nil
}

// checkResults checks what the queue returned for a delivery's runs.
func checkResults(reqs []*queue.RunRequest, results []queue.PublishResult) error {
	if len(results) != len(reqs) {
		return fmt.Errorf("publishing the delivery's %d runs: the queue returned %d results", len(reqs), len(results))
	}
	for i, r := range results {
		if r.RunID == "" {
			return fmt.Errorf("publishing run of workflow %s: queue returned no run id", reqs[i].Workflow)
		}
	}
	return nil
}

// rerunNames lists run ids for a log line.
func rerunNames(reqs []*queue.RunRequest) string {
	var ids []string
	for _, r := range reqs {
		if r.RerunOf != "" {
			ids = append(ids, r.RerunOf)
		}
	}
	return strings.Join(ids, ",")
}

// receivedTTL is how long deliveries are stored, for messages.
func (s *Server) receivedTTL() string {
	if t, ok := s.deliveries.(interface{ TTL() time.Duration }); ok {
		return t.TTL().String()
	}
	return "a limited time"
}

// ErrRepoNotAllowed: the run's repository is no longer in allow_repos.
var ErrRepoNotAllowed = errors.New("repository not allowed (allow_repos)")

// ErrNotFinished: only a finished run can be re-run.
var ErrNotFinished = errors.New("only a finished run can be re-run (cancel it first)")

// rerun queues a new run of a finished run's workflow (loaded now) on its
// event, linked both ways: POST /api/v1/runs/{id}/rerun and the UI's
// button. queue.ErrNotFound, ErrNotFinished, ErrRepoNotAllowed (the
// repository has left allow_repos since) and errWorkflowGone say why not;
// any other error is the queue's.
func (s *Server) rerun(ctx context.Context, id string) (rerunAnswer, error) {
	if s.records == nil {
		return rerunAnswer{}, errors.New("re-running: the publisher keeps no run records")
	}
	rec, _, err := s.records.Get(ctx, id)
	if err != nil {
		return rerunAnswer{}, err
	}
	if !rec.Status.Terminal() {
		return rerunAnswer{}, fmt.Errorf("run %s is %s: %w", rec.ID, rec.Status, ErrNotFinished)
	}
	if rec.Event.Repo != "" && !s.repoAllowed(rec.Event.Repo) {
		s.logger.Info("re-run refused: repository not allowed", "run", rec.ID, "repo", rec.Event.Repo)
		return rerunAnswer{}, fmt.Errorf("re-running run %s of %s: %w", rec.ID, rec.Event.Repo, ErrRepoNotAllowed)
	}
	req, err := s.rerunRequest(ctx, rec, "")
	if errors.Is(err, errWorkflowGone) {
		return rerunAnswer{}, fmt.Errorf("workflow %q of run %s: %w", rec.Workflow, rec.ID, err)
	}
	if err != nil {
		s.logger.Error("re-running a run", "run", rec.ID, "err", err)
		return rerunAnswer{}, err
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PublishTimeout)
	defer cancel()
	reqs := []*queue.RunRequest{req}
	results, err := s.publishAll(pctx, reqs)
	if err != nil {
		s.logger.Error("publishing a re-run", "run", rec.ID, "err", err)
		return rerunAnswer{}, err
	}
	s.linkReruns(pctx, reqs, results)
	s.logger.Info("run re-run", "workflow", req.Workflow, "run", rec.ID, "rerun", results[0].RunID)
	return rerunAnswer{Run: results[0].RunID, Workflow: req.Workflow, RerunOf: rec.ID,
		WorkflowChanged: rec.WorkflowDigest != "" && rec.WorkflowDigest != req.WorkflowDigest}, nil
}

// Rerun re-runs a finished run and returns the new run's id (the web UI's
// re-run button: ui.Rerunner).
func (s *Server) Rerun(ctx context.Context, id string) (string, error) {
	ans, err := s.rerun(ctx, id)
	return ans.Run, err
}
