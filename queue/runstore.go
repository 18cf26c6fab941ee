package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// Errors of the run store.
var (
	// ErrConflict: the record exists (Create) or changed since the revision
	// the caller read (Update). Re-read and retry.
	ErrConflict = errors.New("run record conflict")
	// ErrNotFound: there is no record with that id.
	ErrNotFound = errors.New("run record not found")
)

// RunRecord is what is known about one run; the API shows it (DESIGN.md §6),
// the runner updates it with compare-and-set.
type RunRecord struct {
	ID               string                `json:"id"`
	Workflow         string                `json:"workflow"`
	WorkflowDigest   string                `json:"workflow_digest,omitempty"`
	Repo             string                `json:"repo,omitempty"`
	Status           workflows.Status      `json:"status"`
	Attempt          int                   `json:"attempt"`
	Event            workflows.Event       `json:"event"` // stored without Raw
	Steps            []workflows.StepState `json:"steps"`
	Error            string                `json:"error"`
	ReportError      string                `json:"report_error,omitempty"`      // last failure to report to the forge
	CommentID        int64                 `json:"comment_id,omitempty"`        // the sticky comment, once created
	HeadSHA          string                `json:"head_sha,omitempty"`          // resolved head commit
	Delivery         *workflows.Delivery   `json:"delivery,omitempty"`          // what became of a sandboxed agent's commits
	Claimant         string                `json:"claimant,omitempty"`          // runner that claimed the run
	HeartbeatAt      time.Time             `json:"heartbeat_at,omitzero"`       // claimant's last sign of life
	CancelRequested  bool                  `json:"cancel_requested,omitempty"`  // POST .../cancel was called
	ConcurrencyGroup string                `json:"concurrency_group,omitempty"` // resolved concurrency group
	TraceID          string                `json:"trace_id,omitempty"`          // OpenTelemetry trace of its delivery (ingress's, else the first claim's); "" when tracing is off
	Params           map[string]string     `json:"params,omitempty"`            // values of the workflow's params (API runs); untrusted text
	RerunOf          string                `json:"rerun_of,omitempty"`          // the run this one re-runs
	Reruns           []string              `json:"reruns,omitempty"`            // the runs that re-ran this one, oldest first
	Origin           string                `json:"origin,omitempty"`            // the stored delivery of the event, when Event.DeliveryID is derived (a re-run, a replay)
	CreatedAt        time.Time             `json:"created_at"`
	StartedAt        *time.Time            `json:"started_at,omitempty"`
	FinishedAt       *time.Time            `json:"finished_at,omitempty"`
}

// MarshalJSON writes steps as [] rather than null.
func (r RunRecord) MarshalJSON() ([]byte, error) {
	type plain RunRecord
	if r.Steps == nil {
		r.Steps = []workflows.StepState{}
	}
	return json.Marshal(plain(r))
}

// ListFilter selects records for List; zero fields match everything.
type ListFilter struct {
	Repo     string           // owner/name
	Workflow string           // workflow name
	Status   workflows.Status // exact status
	Limit    int              // at most this many (newest first); 0 = all
}

func (f ListFilter) match(r *RunRecord) bool {
	return (f.Repo == "" || r.Repo == f.Repo) &&
		(f.Workflow == "" || r.Workflow == f.Workflow) &&
		(f.Status == "" || r.Status == f.Status)
}

// RunStore keeps run records in the hookrun_runs bucket, keyed by run id.
// Records change through the transitions of transitions.go.
type RunStore struct {
	kv    jetstream.KeyValue
	clock func() time.Time // Config.Now
}

// now is the store's clock reading, in UTC.
func (s *RunStore) now() time.Time { return s.clock().UTC() }

func encodeRecord(rec *RunRecord) ([]byte, error) {
	c := *rec
	c.Event.Raw = nil
	return json.Marshal(c)
}

func decodeRecord(data []byte) (*RunRecord, error) {
	var r RunRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding run record: %w", err)
	}
	return &r, nil
}

func checkID(id string) error {
	if id == "" || !kvSafe.MatchString(id) {
		return fmt.Errorf("invalid run id %q", id)
	}
	return nil
}

// Create stores a new record; ErrConflict if one with its id exists.
func (s *RunStore) Create(ctx context.Context, rec *RunRecord) (uint64, error) {
	if err := checkID(rec.ID); err != nil {
		return 0, fmt.Errorf("creating run record: %w", err)
	}
	data, err := encodeRecord(rec)
	if err != nil {
		return 0, fmt.Errorf("creating run record %s: %w", rec.ID, err)
	}
	rev, err := s.kv.Create(ctx, rec.ID, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("creating run record %s: %w", rec.ID, ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("creating run record %s: %w", rec.ID, err)
	}
	return rev, nil
}

// delete removes a record if it is still at rev.
func (s *RunStore) delete(ctx context.Context, id string, rev uint64) error {
	if err := s.kv.Delete(ctx, id, jetstream.LastRevision(rev)); err != nil {
		return fmt.Errorf("deleting run record %s: %w", id, err)
	}
	return nil
}

// Get returns a record and its revision; ErrNotFound if absent.
func (s *RunStore) Get(ctx context.Context, id string) (*RunRecord, uint64, error) {
	if err := checkID(id); err != nil {
		return nil, 0, fmt.Errorf("getting run record: %w: %w", ErrNotFound, err)
	}
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, 0, fmt.Errorf("getting run record %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("getting run record %s: %w", id, err)
	}
	rec, err := decodeRecord(e.Value())
	if err != nil {
		return nil, 0, fmt.Errorf("getting run record %s: %w", id, err)
	}
	return rec, e.Revision(), nil
}

// Update replaces the record if it is still at rev (compare-and-set) and
// returns the new revision; errors.Is(err, ErrConflict) when it is not.
func (s *RunStore) Update(ctx context.Context, rec *RunRecord, rev uint64) (uint64, error) {
	if err := checkID(rec.ID); err != nil {
		return 0, fmt.Errorf("updating run record: %w", err)
	}
	data, err := encodeRecord(rec)
	if err != nil {
		return 0, fmt.Errorf("updating run record %s: %w", rec.ID, err)
	}
	nrev, err := s.kv.Update(ctx, rec.ID, data, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("updating run record %s at revision %d: %w", rec.ID, rev, ErrConflict)
	}
	if err != nil {
		return 0, fmt.Errorf("updating run record %s: %w", rec.ID, err)
	}
	return nrev, nil
}

// List returns the records that match f, newest first (run ids are ULIDs).
func (s *RunStore) List(ctx context.Context, f ListFilter) ([]*RunRecord, error) {
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing run records: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var out []*RunRecord
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listing run records: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("listing run records: watcher closed")
			}
			if e == nil { // all current values seen
				slices.SortFunc(out, func(a, b *RunRecord) int { return strings.Compare(b.ID, a.ID) })
				if f.Limit > 0 && len(out) > f.Limit {
					out = out[:f.Limit]
				}
				return out, nil
			}
			rec, err := decodeRecord(e.Value())
			if err != nil {
				continue
			}
			if f.match(rec) {
				out = append(out, rec)
			}
		}
	}
}

// watchSetupTimeout bounds the creation of a watch's consumer.
const watchSetupTimeout = 10 * time.Second

// Watch sends the current record (id "" = every record) and then each
// change, until ctx ends; then the channel is closed.
func (s *RunStore) Watch(ctx context.Context, id string) (<-chan *RunRecord, error) {
	if id != "" {
		if err := checkID(id); err != nil {
			return nil, fmt.Errorf("watching run record: %w", err)
		}
	}
	if ctx.Err() != nil {
		// Nothing to watch for a caller that is done (a run that ended
		// before its watch was set up): the channel is closed at once.
		out := make(chan *RunRecord)
		close(out)
		return out, nil
	}
	// A watch is a consumer on the server. Its creation must not be cut
	// short by ctx: a create the server performed but whose answer was
	// abandoned leaves the consumer behind until its inactivity threshold,
	// and a runner whose runs finish within the round trip (each run
	// watches its record) piled up hundreds of them, with their memory.
	// So the watch lives on wctx, cancelled when ctx ends (which stops
	// the subscription and deletes the consumer) or when setup takes
	// longer than watchSetupTimeout.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	guard := time.AfterFunc(watchSetupTimeout, cancel)
	var (
		w   jetstream.KeyWatcher
		err error
	)
	if id == "" {
		w, err = s.kv.WatchAll(wctx, jetstream.IgnoreDeletes())
	} else {
		w, err = s.kv.Watch(wctx, id, jetstream.IgnoreDeletes())
	}
	guard.Stop()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching run record %q: %w", id, err)
	}
	stopAfter := context.AfterFunc(ctx, cancel)
	out := make(chan *RunRecord, 16)
	go func() {
		defer close(out)
		defer cancel()
		defer stopAfter()
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil || e.Operation() != jetstream.KeyValuePut {
					continue
				}
				rec, err := decodeRecord(e.Value())
				if err != nil {
					continue
				}
				select {
				case out <- rec:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}
