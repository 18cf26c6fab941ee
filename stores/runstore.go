package stores

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// BucketRuns is the KV bucket of run records.
const BucketRuns = "hookrun_runs"

// runsConfig is hookrun_runs, whose markers of removed records expire
// (PurgeTTL, RunMarkerTTL).
func runsConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:         BucketRuns,
		Description:    "hookrun run records",
		LimitMarkerTTL: RunMarkerTTL,
	}
}

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
	ID             string                `json:"id"`
	Workflow       string                `json:"workflow"`
	WorkflowDigest string                `json:"workflow_digest,omitempty"`
	Repo           string                `json:"repo,omitempty"`
	Status         workflows.Status      `json:"status"`
	Attempt        int                   `json:"attempt"`
	Event          workflows.Event       `json:"event"` // stored without Raw
	Steps          []workflows.StepState `json:"steps"`
	Error          string                `json:"error"`
	ReportError    string                `json:"report_error,omitempty"` // last failure to report to the forge
	CommentID      int64                 `json:"comment_id,omitempty"`   // the sticky comment, once created
	HeadSHA        string                `json:"head_sha,omitempty"`     // resolved head commit
	Delivery       *workflows.Delivery   `json:"delivery,omitempty"`     // what became of a sandboxed agent's commits
	// Actions is what became of the actions the run's steps asked for
	// (actions.json): applied, refused with the reason, failed.
	Actions          *workflows.ActionsOutcome `json:"actions,omitempty"`
	Claimant         string                    `json:"claimant,omitempty"`          // runner that claimed the run
	HeartbeatAt      time.Time                 `json:"heartbeat_at,omitzero"`       // claimant's last sign of life
	CancelRequested  bool                      `json:"cancel_requested,omitempty"`  // POST .../cancel was called
	ConcurrencyGroup string                    `json:"concurrency_group,omitempty"` // resolved concurrency group
	TraceID          string                    `json:"trace_id,omitempty"`          // OpenTelemetry trace of its delivery (ingress's, else the first claim's); "" when tracing is off
	Params           map[string]string         `json:"params,omitempty"`            // values of the workflow's params (API runs); untrusted text
	RerunOf          string                    `json:"rerun_of,omitempty"`          // the run this one re-runs
	Reruns           []string                  `json:"reruns,omitempty"`            // the runs that re-ran this one, oldest first
	Origin           string                    `json:"origin,omitempty"`            // the stored delivery of the event, when Event.DeliveryID is derived (a re-run, a replay)
	CreatedAt        time.Time                 `json:"created_at"`
	StartedAt        *time.Time                `json:"started_at,omitempty"`
	FinishedAt       *time.Time                `json:"finished_at,omitempty"`
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
	PR       int              // pull/merge request (or issue) number of the run's event
	Limit    int              // at most this many (newest first); 0 = all
	// Cursor continues a listing after the last run of the previous page
	// (List's next cursor); "" starts at the newest run.
	Cursor string
}

func (f ListFilter) match(r *RunRecord) bool {
	return (f.Repo == "" || r.Repo == f.Repo) &&
		(f.Workflow == "" || r.Workflow == f.Workflow) &&
		(f.Status == "" || r.Status == f.Status) &&
		(f.PR == 0 || r.Event.Number() == f.PR)
}

// ErrBadCursor: a ListFilter.Cursor that List did not hand out.
var ErrBadCursor = errors.New("invalid list cursor")

// encodeCursor makes the opaque cursor that continues after run id.
func encodeCursor(id string) string {
	if id == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte("r1:" + id))
}

// decodeCursor is the run id a cursor continues after.
func decodeCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	id, ok := strings.CutPrefix(string(b), "r1:")
	if err != nil || !ok || checkID(id) != nil {
		return "", ErrBadCursor
	}
	return id, nil
}

// RunStore keeps run records in the hookrun_runs bucket, keyed by run id.
// Records change through the transitions of transitions.go.
type RunStore struct {
	kv    jetstream.KeyValue
	nc    *nats.Conn       // batched reads of a page (getBatch); nil: one Get each
	clock func() time.Time // Options.Now
	// index answers List; started by the first List (or StartIndex) and
	// stopped by Close.
	index     *RunIndex
	indexCtx  context.Context
	stopIndex context.CancelFunc
	// lastWrite is the newest revision this process wrote: List waits
	// until the index applied it.
	lastWrite atomic.Uint64
	// singleGets counts the records List read one by one, outside the
	// batched read (tests).
	singleGets atomic.Int64
	// recent is what the transitions of unfinished runs start from.
	recent recentRecords
}

// OpenRuns creates or updates the hookrun_runs bucket and returns its
// store. Close stops its index.
func OpenRuns(ctx context.Context, o Options) (*RunStore, error) {
	kv, err := queue.CreateBucket(ctx, o.Shared, runsConfig())
	if err != nil {
		return nil, err
	}
	s := &RunStore{kv: kv, nc: o.JetStream.Conn(), clock: o.Now, index: newRunIndex(o.JetStream, o.IndexDir, o.Logger)}
	s.indexCtx, s.stopIndex = context.WithCancel(context.Background())
	return s, nil
}

// Close stops the index's watch and closes its file.
func (s *RunStore) Close() {
	s.stopIndex()
	s.index.close()
}

// KV is the bucket of run records (queue.Records).
func (s *RunStore) KV() jetstream.KeyValue { return s.kv }

// Created notes the queued record of run id that this process created
// at rev (queue.Records): List waits until the index applied it, and,
// given data, the record as stored, the run's first transition starts
// from it.
func (s *RunStore) Created(id string, data []byte, rev uint64) {
	s.wrote(rev)
	if data != nil {
		s.recent.remember(id, data, rev, false)
	}
}

// Dropped notes that this process deleted, or tried to delete, the
// record of run id outside the transitions (queue.Records: a publish's
// rollback).
func (s *RunStore) Dropped(id string) { s.recent.forget(id) }

// wrote notes a revision this process wrote: List waits until the index
// applied it.
func (s *RunStore) wrote(rev uint64) {
	for {
		cur := s.lastWrite.Load()
		if rev <= cur || s.lastWrite.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// StartIndex starts loading the index that List reads (List starts it
// too, and waits for it): processes that serve the API start it with
// theirs, so that the first request does not wait for the load.
func (s *RunStore) StartIndex() *RunIndex {
	s.index.start(s.indexCtx)
	return s.index
}

// IndexHealth is the index's Health: nil when it follows the bucket or
// was not started (/readyz).
func (s *RunStore) IndexHealth() error { return s.index.Health() }

// now is the store's clock reading, in UTC.
func (s *RunStore) now() time.Time { return s.clock().UTC() }

func encodeRecord(rec *RunRecord) ([]byte, error) {
	c := *rec
	c.Event.Raw = nil
	return json.Marshal(c)
}

func decodeRecord(data []byte) (*RunRecord, error) {
	var r RunRecord
	if err := queue.DecodeJSON(data, &r); err != nil {
		return nil, fmt.Errorf("decoding run record: %w", err)
	}
	return &r, nil
}

// checkID refuses what cannot be a run id.
func checkID(id string) error { return queue.CheckRunID(id) }

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
	s.wrote(rev)
	s.recent.remember(rec.ID, data, rev, rec.Status.Terminal())
	return rev, nil
}

// delete removes a record if it is still at rev.
func (s *RunStore) delete(ctx context.Context, id string, rev uint64) error {
	s.recent.forget(id)
	if err := s.kv.Delete(ctx, id, jetstream.LastRevision(rev)); err != nil {
		return fmt.Errorf("deleting run record %s: %w", id, err)
	}
	return nil
}

// Get returns a record and its revision; ErrNotFound if absent.
func (s *RunStore) Get(ctx context.Context, id string) (*RunRecord, uint64, error) {
	rec, _, rev, err := s.get(ctx, id)
	return rec, rev, err
}

// get is Get with the record as stored.
func (s *RunStore) get(ctx context.Context, id string) (*RunRecord, []byte, uint64, error) {
	if err := checkID(id); err != nil {
		return nil, nil, 0, fmt.Errorf("getting run record: %w: %w", ErrNotFound, err)
	}
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, nil, 0, fmt.Errorf("getting run record %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("getting run record %s: %w", id, err)
	}
	rec, err := decodeRecord(e.Value())
	if err != nil {
		return nil, nil, 0, fmt.Errorf("getting run record %s: %w", id, err)
	}
	return rec, e.Value(), e.Revision(), nil
}

// getRemembered is get for a transition: the record is remembered for the
// run's next one (recentRecords), and forgotten when absent.
func (s *RunStore) getRemembered(ctx context.Context, id string) (*RunRecord, uint64, error) {
	rec, data, rev, err := s.get(ctx, id)
	switch {
	case err == nil:
		s.recent.remember(id, data, rev, rec.Status.Terminal())
	case errors.Is(err, ErrNotFound):
		s.recent.forget(id)
	}
	return rec, rev, err
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
		s.recent.forget(rec.ID)
		return 0, fmt.Errorf("updating run record %s at revision %d: %w", rec.ID, rev, ErrConflict)
	}
	if err != nil {
		// The outcome is unknown: the next transition reads.
		s.recent.forget(rec.ID)
		return 0, fmt.Errorf("updating run record %s: %w", rec.ID, err)
	}
	s.wrote(nrev)
	s.recent.remember(rec.ID, data, nrev, rec.Status.Terminal())
	return nrev, nil
}

// indexLagMax is how long List waits for the index to apply this
// process's last write.
const indexLagMax = 2 * time.Second

// listGetters is how many records of a page List reads at once when the
// batched read (getBatch) left some out.
const listGetters = 8

// getPage reads the records of ids: in batched reads of up to maxBatchGet
// where the server answers them, the rest (and all of them where it does
// not) one Get each.
// errs[i] is ErrNotFound for a record deleted meanwhile.
func (s *RunStore) getPage(ctx context.Context, ids []string) ([]*RunRecord, []error) {
	recs := make([]*RunRecord, len(ids))
	errs := make([]error, len(ids))
	var rest []int
	for start := 0; start < len(ids); start += maxBatchGet {
		chunk := ids[start:min(len(ids), start+maxBatchGet)]
		got, err := s.getBatch(ctx, chunk)
		for j, id := range chunk {
			r, ok := got[id]
			switch i := start + j; {
			case err == nil && ok && r == nil:
				errs[i] = ErrNotFound
			case err == nil && ok:
				recs[i] = r
			default:
				rest = append(rest, i)
			}
		}
	}
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(listGetters, len(rest)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				recs[i], _, errs[i] = s.Get(ctx, ids[i])
			}
		}()
	}
	s.singleGets.Add(int64(len(rest)))
	for _, i := range rest {
		work <- i
	}
	close(work)
	wg.Wait()
	return recs, errs
}

// kvSubject is the subject hookrun_runs stores key under (queue's raw
// KV writes rely on the same layout: TestRawKVSubjects).
func kvSubject(key string) string { return "$KV." + BucketRuns + "." + key }

// maxBatchGet is the most subjects one batched read asks for (the
// server answers at most 1024).
const maxBatchGet = 1000

// getBatch reads the last revision of each of ids with one direct-get
// request for them all (JetStream's multi_last, answered by a stream of
// messages ending in a 204): a map from id to its record, nil for one
// that was deleted; ids the answer left out are not in the map.
func (s *RunStore) getBatch(ctx context.Context, ids []string) (map[string]*RunRecord, error) {
	out := make(map[string]*RunRecord, len(ids))
	if s.nc == nil || len(ids) == 0 {
		return out, nil
	}
	subjects := make([]string, len(ids))
	for i, id := range ids {
		subjects[i] = kvSubject(id)
	}
	req, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
		Batch     int      `json:"batch"`
	}{subjects, len(ids)})
	if err != nil {
		return nil, err
	}
	inbox := s.nc.NewRespInbox()
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("reading run records: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := s.nc.PublishRequest("$JS.API.DIRECT.GET.KV_"+BucketRuns, inbox, req); err != nil {
		return nil, fmt.Errorf("reading run records: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	prefix := kvSubject("")
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading run records: %w", err)
		}
		switch m.Header.Get("Status") {
		case "":
		case "204", "404": // the end of the batch; none of them exists
			return out, nil
		default:
			return nil, fmt.Errorf("reading run records: %s %s", m.Header.Get("Status"), m.Header.Get("Description"))
		}
		id, ok := strings.CutPrefix(m.Header.Get("Nats-Subject"), prefix)
		if !ok {
			continue
		}
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			out[id] = nil
			continue
		}
		if rec, err := decodeRecord(m.Data); err == nil {
			out[id] = rec
		}
	}
}

// List returns a page of the records that match f, newest first (run ids
// are ULIDs), and the cursor of the next page ("" when there is none). It
// reads the index (RunIndex), never the whole bucket: the page's ids come
// from the index file, then the page's records are read by id. A record that
// changed between the two so that it no longer matches (its status moved
// on) is left out of the page. errors.Is(err, ErrBadCursor): f.Cursor is
// not one List handed out.
func (s *RunStore) List(ctx context.Context, f ListFilter) ([]*RunRecord, string, error) {
	after, err := decodeCursor(f.Cursor)
	if err != nil {
		return nil, "", fmt.Errorf("listing run records: %w", err)
	}
	x := s.StartIndex()
	if err := x.Wait(ctx); err != nil {
		return nil, "", fmt.Errorf("listing run records: %w", err)
	}
	// Read-your-writes, within bounds: an index that stopped following
	// the bucket serves what it has rather than hang every list.
	wctx, cancel := context.WithTimeout(ctx, indexLagMax)
	err = x.waitApplied(wctx, s.lastWrite.Load())
	cancel()
	if err != nil && ctx.Err() != nil {
		return nil, "", fmt.Errorf("listing run records: %w", err)
	}
	ids, next, err := x.page(f, after, f.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("listing run records: %w", err)
	}
	recs, errs := s.getPage(ctx, ids)
	out := recs[:0]
	for i, rec := range recs {
		switch {
		case errors.Is(errs[i], ErrNotFound): // deleted since
		case errs[i] != nil:
			return nil, "", fmt.Errorf("listing run records: %w", errs[i])
		case f.match(rec):
			out = append(out, rec)
		}
	}
	return out, encodeCursor(next), nil
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
