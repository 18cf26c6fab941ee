package stores

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
	"github.com/nats-io/nats.go/jetstream"
)

// Every delivery ingress accepts for a repository it serves is stored in
// hookrun_received, keyed by forge and delivery id, for Options.ReceivedTTL:
// the forge's event name and the body exactly as received, so that
// POST /api/v1/deliveries/{id}/replay can match it again against the
// workflows loaded then, and a re-run finds the payload of its event
// (a run record keeps its event without Raw). It is written in the same
// round trip as the delivery's keys (AcceptDelivery), before the 202, and
// removed again with them when the delivery fails. A body too large for a
// KV value is stored once in hookrun_bodies under the name its runs use,
// and referenced.

// Received is one stored delivery.
type Received struct {
	Forge      workflows.Forge `json:"forge"`
	ID         string          `json:"id"`    // the delivery id (the forge's delivery header, or its dedupe key)
	Event      string          `json:"event"` // the forge's event name (its event header)
	ReceivedAt time.Time       `json:"received_at"`
	// What ingress decided (below); absent from entries stored
	// before the deliveries view.
	Kind      string            `json:"kind,omitempty"`    // the normalized event kind
	Repo      string            `json:"repo,omitempty"`    // the repository of the event
	Headers   map[string]string `json:"headers,omitempty"` // the request headers that say what was sent (never a secret's)
	Workflows []Considered      `json:"workflows,omitempty"`
	Runs      []ReceivedRun     `json:"runs,omitempty"` // the runs the delivery's first copy queued
	Replays   []Replay          `json:"replays,omitempty"`
	// LabelChange is the label change ingress decided at the first
	// receipt from the labels it saw before, for a forge whose deliveries
	// do not say which label was added or removed; the deliveries view
	// and replays use it rather than asking that memory again. Nil for
	// other deliveries and those stored before it was kept.
	LabelChange *LabelChange `json:"label_change,omitempty"`
	// Reason says why the delivery was not matched against the workflows
	// at all, for one that was not (KeepUnmatched): "repository not
	// allowed", "event check_run is not handled", what its payload's
	// decoding said. Refused tells a refusal (outcome refused) from a
	// skip (skipped). Such an entry keeps no body.
	Reason  string `json:"reason,omitempty"`
	Refused bool   `json:"refused,omitempty"`
	// Body names the hookrun_bodies object holding Raw when it was too
	// large to store inline.
	Body string `json:"body,omitempty"`
	// Raw is the body exactly as received.
	Raw []byte `json:"-"`
}

// LabelChange is what a label change delivery was taken for when it
// arrived: its Event's Action (labeled or unlabeled), Label and
// LabelActionUnknown.
type LabelChange struct {
	Action  string `json:"action"`
	Label   string `json:"label,omitempty"`
	Unknown bool   `json:"unknown,omitempty"`
}

// LabelChangeOf is the label change ev was taken for.
func LabelChangeOf(ev *workflows.Event) *LabelChange {
	return &LabelChange{Action: ev.Action, Label: ev.Label, Unknown: ev.LabelActionUnknown}
}

// Apply makes ev the label change c (nil: leaves ev as it is).
func (c *LabelChange) Apply(ev *workflows.Event) {
	if c != nil {
		ev.Action, ev.Label, ev.LabelActionUnknown = c.Action, c.Label, c.Unknown
	}
}

// ReplayDelivery is the delivery id of the n-th replay of delivery id: a
// new id, so that the 72 h delivery keys of the original do not dedupe it.
func ReplayDelivery(id string, n int) string { return id + ":replay:" + strconv.Itoa(n) }

// RerunDelivery is the delivery id of a re-run: of run runID through the
// API, or (trigger set) of the runs a /retry comment delivery asked for,
// which its redeliveries then dedupe. origin is the stored delivery of the
// re-run's event.
func RerunDelivery(origin, runID, trigger string) string {
	if trigger != "" {
		return origin + ":retry:" + trigger
	}
	return origin + ":rerun:" + runID
}

// receivedKey is the hookrun_received key of a delivery: readable when its
// parts are KV-safe, else a hash (as the queue's delivery keys).
func receivedKey(forge workflows.Forge, id string) string {
	if queue.KVSafe(string(forge)) && queue.KVSafe(id) && len(id) <= 128 {
		return string(forge) + "." + id
	}
	sum := sha256.Sum256([]byte(string(forge) + ":" + id))
	return "h." + hex.EncodeToString(sum[:])
}

// unmatchedKey is the hookrun_received key of a delivery that was not
// matched against the workflows (KeepUnmatched): apart from receivedKey's,
// so that an accepted copy of the same delivery (a redelivery once its
// repository is allowed) is stored whole beside it and Get finds that one.
func unmatchedKey(forge workflows.Forge, id string) string { return "u." + receivedKey(forge, id) }

// replayCounterKey holds the number of the last replay of a delivery
// (received keys start with a forge name or "h.").
func replayCounterKey(forge workflows.Forge, id string) string { return "n." + receivedKey(forge, id) }

// encodeReceived is the stored form: the JSON header, a newline, the body
// (no re-encoding of a 28 KB payload on the ingest path).
func encodeReceived(d *Received, inline bool) ([]byte, error) {
	h, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encoding received delivery %s: %w", d.ID, err)
	}
	if !inline {
		return append(h, '\n'), nil
	}
	out := make([]byte, 0, len(h)+1+len(d.Raw))
	out = append(append(append(out, h...), '\n'), d.Raw...)
	return out, nil
}

func decodeReceived(data []byte) (*Received, error) {
	h, raw, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return nil, errors.New("decoding received delivery: no header")
	}
	var d Received
	if err := json.Unmarshal(h, &d); err != nil {
		return nil, fmt.Errorf("decoding received delivery: %w", err)
	}
	if d.Body == "" {
		d.Raw = raw
	}
	return &d, nil
}

// ErrNotReceived: no delivery with that id is stored (never accepted, or
// older than Options.ReceivedTTL).
var ErrNotReceived = errors.New("delivery not stored")

// BucketReceived is the KV bucket of accepted deliveries (event name and
// body), for replays and re-runs.
const BucketReceived = "hookrun_received"

// ReceivedStore reads the stored deliveries.
type ReceivedStore struct {
	kv     jetstream.KeyValue
	bodies bodies
	ttl    time.Duration
	now    func() time.Time
	// index answers List (deliveryindex.go); started by the first List
	// (or StartIndex) and stopped by Close.
	index     *deliveryIndex
	indexCtx  context.Context
	stopIndex context.CancelFunc
	// lastWrite is the newest index key revision this process wrote:
	// List waits until the index applied it.
	lastWrite atomic.Uint64
}

// bodies reads the bodies too large for a KV value (*queue.Queue).
type bodies interface {
	Body(ctx context.Context, name string) ([]byte, error)
}

var _ bodies = (*queue.Queue)(nil)

// OpenReceived creates or updates the hookrun_received bucket, whose
// entries expire after o.ReceivedTTL, and returns its store; large bodies
// are read from b.
func OpenReceived(ctx context.Context, o Options, b bodies) (*ReceivedStore, error) {
	return openBucket(ctx, o, BucketReceived, "hookrun accepted deliveries, for replays and re-runs", o.ReceivedTTL,
		func(kv jetstream.KeyValue) *ReceivedStore {
			s := &ReceivedStore{kv: kv, bodies: b, ttl: o.ReceivedTTL, now: o.Now,
				index: newDeliveryIndex(o.JetStream, o.IndexDir, o.ReceivedTTL, o.Now, o.Logger)}
			s.indexCtx, s.stopIndex = context.WithCancel(context.Background())
			return s
		})
}

// StartIndex starts the index that List reads (List starts it too, and
// waits for it): processes that serve the API start it with theirs.
func (s *ReceivedStore) StartIndex() {
	s.index.start(s.indexCtx)
}

// IndexHealth is the index's Health: nil when it follows the bucket or
// was not started (/readyz).
func (s *ReceivedStore) IndexHealth() error { return s.index.Health() }

// Close stops the index's watch and closes its file.
func (s *ReceivedStore) Close() {
	s.stopIndex()
	s.index.close()
}

// TTL is how long a delivery stays stored.
func (s *ReceivedStore) TTL() time.Duration { return s.ttl }

// Get returns a stored delivery with its body; ErrNotReceived if there is
// none.
func (s *ReceivedStore) Get(ctx context.Context, forge workflows.Forge, id string) (*Received, error) {
	e, err := s.kv.Get(ctx, receivedKey(forge, id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		e, err = s.kv.Get(ctx, unmatchedKey(forge, id))
	}
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, fmt.Errorf("reading delivery %s %s: %w", forge, id, ErrNotReceived)
	}
	if err != nil {
		return nil, fmt.Errorf("reading delivery %s %s: %w", forge, id, err)
	}
	d, err := decodeReceived(e.Value())
	if err != nil {
		return nil, fmt.Errorf("reading delivery %s %s: %w", forge, id, err)
	}
	if d.Body != "" {
		raw, err := s.bodies.Body(ctx, d.Body)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("reading the body %s of delivery %s %s: %w", d.Body, forge, id, ErrNotReceived)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the body %s of delivery %s %s: %w", d.Body, forge, id, err)
		}
		d.Raw = raw
	}
	return d, nil
}

// KeepUnmatched stores a verified delivery that was not matched against
// the workflows (d.Reason says why, d.Refused whether it was refused or
// skipped) and indexes it for the deliveries list: two small writes, its
// header without the body, whoever sent it (a repository outside
// allow_repos may be anyone's who installed the same App), so that such
// deliveries cost no more than their summary. It is not replayable; the
// forge can redeliver it.
func (s *ReceivedStore) KeepUnmatched(ctx context.Context, d *Received) error {
	if d.Reason == "" {
		return fmt.Errorf("storing delivery %s: an unmatched delivery needs its reason", d.ID)
	}
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = s.now().UTC()
	}
	d.Raw, d.Body = nil, ""
	data, err := encodeReceived(d, true)
	if err != nil {
		return err
	}
	if _, err := s.kv.Put(ctx, unmatchedKey(d.Forge, d.ID), data); err != nil {
		return fmt.Errorf("storing delivery %s %s: %w", d.Forge, d.ID, err)
	}
	return s.indexed(ctx, d, nil)
}

// NextReplay reserves the number of the next replay of a delivery (1 for
// the first), with compare-and-set: concurrent replays get distinct
// numbers.
func (s *ReceivedStore) NextReplay(ctx context.Context, forge workflows.Forge, id string) (int, error) {
	key := replayCounterKey(forge, id)
	for range casAttempts {
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			if _, err := s.kv.Create(ctx, key, []byte("1")); err == nil {
				return 1, nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) {
				return 0, fmt.Errorf("numbering a replay of delivery %s: %w", id, err)
			}
		case err != nil:
			return 0, fmt.Errorf("numbering a replay of delivery %s: %w", id, err)
		default:
			n, _ := strconv.Atoi(string(e.Value()))
			n++
			if _, err := s.kv.Update(ctx, key, []byte(strconv.Itoa(n)), e.Revision()); err == nil {
				return n, nil
			} else if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				return 0, fmt.Errorf("numbering a replay of delivery %s: %w", id, err)
			}
		}
	}
	return 0, fmt.Errorf("numbering a replay of delivery %s: %w", id, ErrConflict)
}

// entry is what queue.AcceptDelivery writes for d beside its runs: its
// header, and its body inline or in hookrun_bodies when too large.
func (s *ReceivedStore) entry(d *Received) *queue.Entry {
	if d.ReceivedAt.IsZero() {
		d.ReceivedAt = s.now().UTC()
	}
	return &queue.Entry{KV: s.kv, Key: receivedKey(d.Forge, d.ID), Forge: d.Forge, Delivery: d.ID, Raw: d.Raw,
		Encode: func(body string) ([]byte, error) {
			d.Body = body
			return encodeReceived(d, body == "")
		}}
}

// The deliveries view (issue 29): what became of each stored delivery.
// The entry of a delivery (received.go) carries, beside its body, what
// ingress decided of it: each workflow considered, matched or not and
// why it did not run, and the runs it started; its replays are added to
// it; an unmatched delivery's entry (KeepUnmatched) carries why it was not
// matched instead. Each accepted copy of a delivery (a redelivery
// included), and each unmatched one, also gets an index key in the same
// bucket, which expires with it:
//
//	x.<19 digits: MaxInt64 - received unix nanos>.<forge>.<outcome>.<event>.<repo>.<ref>
//
// newest first in key order, each filter a token (the event and the
// repository as tokens of their digests when they are not plain names),
// and a small value (DeliverySummary). The deliveries index
// (deliveryindex.go) follows these keys: a page reads the index alone,
// never a body nor the bucket.
// Entries stored before this carry no decisions and have no index key:
// Get still reads them.

// Delivery outcomes (DeliverySummary.Outcome, the list's outcome filter).
const (
	OutcomeRan       = "ran"       // at least one run was queued that may execute
	OutcomeSkipped   = "skipped"   // no workflow's triggers matched, or hookrun does not handle the event
	OutcomeRefused   = "refused"   // a workflow matched but its authorize policy (or an unknown head) refused the event, or the delivery's repository is not allowed or its payload could not be read
	OutcomeDuplicate = "duplicate" // every run already existed: a redelivery
)

// Outcomes are the outcomes, in the order the filters list them.
var Outcomes = []string{OutcomeRan, OutcomeSkipped, OutcomeRefused, OutcomeDuplicate}

// Considered is what ingress decided of one workflow for a delivery.
type Considered struct {
	Workflow string `json:"workflow"`         // "" for command lines past the per-comment limit
	Matched  bool   `json:"matched"`          // its triggers matched the event
	Ran      bool   `json:"ran"`              // a run of it was queued
	Reason   string `json:"reason,omitempty"` // why it did not run
}

// ReceivedRun is a run a delivery (or a replay) started.
type ReceivedRun struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	RerunOf  string `json:"rerun_of,omitempty"` // a /retry's re-run: the run it re-runs
	Refused  string `json:"refused,omitempty"`  // why the run will fail without executing
}

// Replay is one replay of a stored delivery.
type Replay struct {
	ID   string        `json:"id"` // its delivery id (ReplayDelivery)
	At   time.Time     `json:"at"`
	Runs []ReceivedRun `json:"runs"`
}

// DeliverySummary is one row of the deliveries list.
type DeliverySummary struct {
	Forge      workflows.Forge `json:"forge"`
	ID         string          `json:"id"`
	Event      string          `json:"event"` // the forge's event name
	Kind       string          `json:"kind"`  // the normalized event kind
	Repo       string          `json:"repo"`
	Outcome    string          `json:"outcome"`
	Reason     string          `json:"reason,omitempty"` // why it was not matched against the workflows (Received.Reason)
	ReceivedAt time.Time       `json:"received_at"`
	Runs       int             `json:"runs"`
}

// DeliveryFilter selects a page of deliveries, newest first. Event is the
// normalized event kind (pull_request, push, ...); empty fields select
// everything.
type DeliveryFilter struct {
	Forge   workflows.Forge
	Repo    string
	Event   string
	Outcome string
	Limit   int    // default and maximum: MaxDeliveryPage
	Cursor  string // the next_cursor of the previous page
}

// MaxDeliveryPage bounds a page of deliveries.
const MaxDeliveryPage = 1000

// outcome is the delivery's outcome given its decisions (d.Workflows,
// d.Runs) and what the queue answered for its runs.
func outcome(d *Received, results []queue.PublishResult) string {
	if len(results) > 0 && !slices.ContainsFunc(results, func(r queue.PublishResult) bool { return !r.Duplicate }) {
		return OutcomeDuplicate
	}
	if d.Reason != "" && d.Refused {
		return OutcomeRefused
	}
	if slices.ContainsFunc(d.Runs, func(r ReceivedRun) bool { return r.Refused == "" }) {
		return OutcomeRan
	}
	if len(d.Runs) > 0 || slices.ContainsFunc(d.Workflows, func(c Considered) bool { return c.Matched }) {
		return OutcomeRefused
	}
	return OutcomeSkipped
}

// plainToken matches what goes into an index key as itself.
var plainToken = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// indexToken is s as one token of an index key: itself when plain, else
// "=" and a digest of it ("-" when empty).
func indexToken(s string) string {
	switch {
	case s == "":
		return "-"
	case plainToken.MatchString(s):
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "=" + hex.EncodeToString(sum[:8])
}

// indexKey is the index key of one accepted copy of d.
func indexKey(d *DeliverySummary) string {
	rev := math.MaxInt64 - d.ReceivedAt.UnixNano()
	sum := sha256.Sum256([]byte(string(d.Forge) + ":" + d.ID))
	return fmt.Sprintf("x.%019d.%s.%s.%s.%s.%s", rev, indexToken(string(d.Forge)), d.Outcome,
		indexToken(d.Kind), indexToken(d.Repo), hex.EncodeToString(sum[:6]))
}

// indexed stores the index key of one accepted copy of d, after its runs
// are persisted with results; a copy whose runs all mapped to another
// delivery's first has the entry of d corrected to name them. A failure
// leaves the delivery stored but out of the list: it is logged by the
// caller, the delivery is accepted.
func (s *ReceivedStore) indexed(ctx context.Context, d *Received, results []queue.PublishResult) error {
	sum := DeliverySummary{Forge: d.Forge, ID: d.ID, Event: d.Event, Kind: d.Kind, Repo: d.Repo,
		Outcome: outcome(d, results), Reason: d.Reason, ReceivedAt: d.ReceivedAt, Runs: len(results)}
	if sum.ReceivedAt.IsZero() {
		sum.ReceivedAt = s.now().UTC()
	}
	data, err := json.Marshal(sum)
	if err != nil {
		return fmt.Errorf("indexing delivery %s: %w", d.ID, err)
	}
	rev, err := s.kv.Put(ctx, indexKey(&sum), data)
	if err != nil {
		return fmt.Errorf("indexing delivery %s: %w", d.ID, err)
	}
	for cur := s.lastWrite.Load(); rev > cur && !s.lastWrite.CompareAndSwap(cur, rev); cur = s.lastWrite.Load() {
	}
	if sum.Outcome != OutcomeDuplicate {
		return nil
	}
	planned, ids := make([]string, len(d.Runs)), make([]string, len(results))
	for i, r := range d.Runs {
		planned[i] = r.ID
	}
	for i, r := range results {
		ids[i] = r.RunID
	}
	if slices.Equal(planned, ids) {
		return nil
	}
	// The entry this copy wrote names the run ids it planned; the queue
	// mapped them to the existing runs. (A redelivery under the same id
	// finds the first copy's entry, which names them already.)
	return s.update(ctx, d.Forge, d.ID, func(e *Received) bool {
		if len(e.Runs) != len(ids) || !slices.EqualFunc(e.Runs, planned, func(r ReceivedRun, id string) bool { return r.ID == id }) {
			return false
		}
		for i := range e.Runs {
			e.Runs[i].ID = ids[i]
		}
		return true
	})
}

// update rewrites the entry of a delivery with compare-and-set: change
// edits the header (false: nothing to write). The body stays as stored.
func (s *ReceivedStore) update(ctx context.Context, forge workflows.Forge, id string, change func(*Received) bool) error {
	key := receivedKey(forge, id)
	for range casAttempts {
		e, err := s.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return fmt.Errorf("updating delivery %s %s: %w", forge, id, ErrNotReceived)
		}
		if err != nil {
			return fmt.Errorf("updating delivery %s %s: %w", forge, id, err)
		}
		d, err := decodeReceived(e.Value())
		if err != nil {
			return fmt.Errorf("updating delivery %s %s: %w", forge, id, err)
		}
		if !change(d) {
			return nil
		}
		data, err := encodeReceived(d, d.Body == "")
		if err != nil {
			return err
		}
		if _, err := s.kv.Update(ctx, key, data, e.Revision()); err == nil {
			return nil
		} else if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return fmt.Errorf("updating delivery %s %s: %w", forge, id, err)
		}
	}
	return fmt.Errorf("updating delivery %s %s: %w", forge, id, ErrConflict)
}

// AddReplay notes a replay on the stored delivery it replays.
func (s *ReceivedStore) AddReplay(ctx context.Context, forge workflows.Forge, id string, r Replay) error {
	return s.update(ctx, forge, id, func(d *Received) bool {
		d.Replays = append(d.Replays, r)
		return true
	})
}

// List returns a page of the stored deliveries, newest first, and the
// cursor of the next page ("" when there is none). It reads the
// deliveries index (deliveryindex.go), never the bucket; a delivery this
// process indexed is in its next list.
func (s *ReceivedStore) List(ctx context.Context, f DeliveryFilter) ([]DeliverySummary, string, error) {
	if f.Limit <= 0 || f.Limit > MaxDeliveryPage {
		f.Limit = MaxDeliveryPage
	}
	if f.Cursor != "" && !validCursor(f.Cursor) {
		return nil, "", fmt.Errorf("listing deliveries: %w", ErrBadCursor)
	}
	s.StartIndex()
	if err := s.index.Wait(ctx); err != nil {
		return nil, "", fmt.Errorf("listing deliveries: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, indexLagMax)
	err := s.index.waitApplied(wctx, s.lastWrite.Load())
	cancel()
	if err != nil && ctx.Err() != nil {
		return nil, "", fmt.Errorf("listing deliveries: %w", err)
	}
	return s.index.page(f)
}

// cursorKey matches an index key List hands out as a cursor.
var cursorKey = regexp.MustCompile(`^x\.[0-9]{19}(\.(-|=[0-9a-f]{16}|[a-z0-9_-]{1,64})){3}\.(-|=[0-9a-f]{16}|[a-z0-9_-]{1,64})\.[0-9a-f]{12}$`)

// validCursor reports whether c can be an index key List handed out.
func validCursor(c string) bool { return cursorKey.MatchString(c) }

// Outcome is what became of the delivery's first copy; "" for an entry
// stored before the deliveries view (no decisions).
func (d *Received) Outcome() string {
	if d.Kind == "" && d.Reason == "" {
		return ""
	}
	return outcome(d, nil)
}
