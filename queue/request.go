package queue

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookrun/hookrun/workflows"
)

// WireVersion is the RunRequest format this build writes and reads.
const WireVersion = 1

// RunRequest is what ingress puts on HOOKRUN_RUNS for a runner to execute:
// one workflow for one event.
type RunRequest struct {
	V              int             `json:"v"`               // WireVersion
	ID             string          `json:"id"`              // run id (ULID)
	Workflow       string          `json:"workflow"`        // workflow name
	WorkflowDigest string          `json:"workflow_digest"` // content digest of the workflow file that matched
	Event          workflows.Event `json:"event"`           // the normalized event, Raw included
	Attempt        int             `json:"attempt"`         // 1 for a fresh run; higher for a manual re-run
	CreatedAt      time.Time       `json:"created_at"`      // when ingress accepted the event
	// Refused, when set, says why this run must not execute although its
	// event matched and was authorized (ingress could not pin the head of
	// the commented pull request): the runner fails the run with this
	// message at claim, reports it, and neither prepares a workspace nor
	// executes a step. Optional and omitted when empty, so the wire format
	// of every other request is unchanged; a runner older than the field
	// would ignore it, so upgrade runners before ingress.
	Refused string `json:"refused,omitempty"`
	// Params are values for the workflow's params given with a run started
	// through the API (POST /api/v1/workflows/{name}/runs). Untrusted text:
	// the runner sets them as environment variables, never as shell source.
	// Optional and omitted when empty, like Refused.
	Params map[string]string `json:"params,omitempty"`
	// Body, when set, names the hookrun_bodies object that holds
	// Event.Raw, which was too large to travel inside the request (and is
	// then absent from it); the consumer reads it back before the handler
	// sees the request. Optional and omitted when empty; a runner older
	// than the field would run without the body, so upgrade runners
	// before ingress.
	Body string `json:"body,omitempty"`
	// BodyDigest is the SHA-256 ("sha256:<hex>") of the body Body names,
	// set with it: the consumer refuses a stored body that does not match
	// (the object store is as reachable as the stream; the request's
	// authenticator, HeaderMAC below, covers this digest). Optional and omitted
	// when Body is empty.
	BodyDigest string `json:"body_digest,omitempty"`
	// Command tells apart the runs of one workflow that one delivery
	// started: a comment with several command lines runs the workflow once
	// per line, and the n-th line's run (n ≥ 1, counting from 0) has
	// Command n. Zero, and omitted, for every other run.
	Command int `json:"command,omitempty"`
	// RerunOf is the run this one re-runs (POST /api/v1/runs/{id}/rerun,
	// a /retry comment, decide/retry.go); CommentID is that run's sticky
	// comment, which the new record starts with so that the reporter
	// edits it. Origin is the stored delivery (hookrun_received) of the
	// event when Event.DeliveryID is a derived one (a re-run's or a
	// replay's). All optional and omitted when empty; they only reach the
	// record.
	RerunOf   string `json:"rerun_of,omitempty"`
	CommentID int64  `json:"comment_id,omitempty"`
	Origin    string `json:"origin,omitempty"`
	// Object, when set, is what the forge's object and its version are
	// (ingress's objectKey: a comment and its command line, a pull
	// request at a head and time, a push's ref and SHAs): PublishDelivery
	// then also dedupes the run by (forge, Object, Workflow) in
	// hookrun_deliveries beside its delivery key, so that the same event
	// under another delivery id maps to the run it started. Empty for
	// re-runs, replays, API runs and schedules, which dedupe by their
	// delivery id alone. Not part of the message.
	Object string `json:"-"`
}

// dedupeName is the workflow part of the request's delivery key: the
// workflow name, with the command's place after a "~" (which no workflow
// name has) for a comment's second command line and later.
func (r *RunRequest) dedupeName() string {
	if r.Command == 0 {
		return r.Workflow
	}
	return r.Workflow + "~" + strconv.Itoa(r.Command)
}

// lenientJSON gives the encoding/json v2 engine (go-json-experiment) the
// leniency of encoding/json v1 that what hookrun stores may need: names
// matched case-insensitively (with `_` and `-` significant), duplicate
// names, and invalid UTF-8 in strings, which a forge's payload (a run
// request's Event.Raw, spliced in as received) and the text taken from it
// may hold and v1 accepted; and v1's forms of what v2 writes otherwise (a
// time.Duration as nanoseconds, byte slices and arrays). A json.RawMessage
// keeps its bytes as they are. (jsonv1.DefaultOptionsV1 would be all of
// v1, and decodes a run request in about twice the time of these.)
var lenientJSON = jsonv2.JoinOptions(
	jsonv2.MatchCaseInsensitiveNames(true),
	jsonv1.MatchCaseSensitiveDelimiter(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
	jsonv1.FormatDurationAsNano(true),
	jsonv1.FormatBytesWithLegacySemantics(true),
	jsonv1.FormatByteArrayAsArray(true),
)

// DecodeJSON decodes data into v as encoding/json v1's Unmarshal does,
// with the v2 engine, which reads a value once where v1 reads it twice
// (validation, then decoding): for what hookrun decodes once or more per
// run (run requests, run records; docs/performance.md, "hookrun's own cost
// per run").
func DecodeJSON(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, lenientJSON)
}

// decodeRunRequest parses a message body and checks its version. The
// request carries the whole payload (28 KB for a pull request), whose
// decoding with encoding/json v1 was 5.4% of a runner's CPU on trivial
// runs (issue 28): DecodeJSON.
func decodeRunRequest(data []byte) (*RunRequest, error) {
	var r RunRequest
	if err := DecodeJSON(data, &r); err != nil {
		return nil, fmt.Errorf("decoding run request: %w", err)
	}
	if r.V != WireVersion {
		return nil, fmt.Errorf("decoding run request: unknown wire version %d", r.V)
	}
	if r.ID == "" || !ValidToken(r.Workflow) {
		return nil, errors.New("decoding run request: missing id or workflow")
	}
	return &r, nil
}

// NewRunID returns a new ULID: unique, and sortable by creation time.
func NewRunID() string {
	return newULID(time.Now())
}

// DeliveryKey identifies one workflow run of one webhook delivery; it is the
// Nats-Msg-Id of the run request.
func DeliveryKey(forge workflows.Forge, delivery, workflow string) string {
	return string(forge) + ":" + delivery + ":" + workflow
}

// ObjectKey identifies one workflow run of one forge object (RunRequest.Object);
// it is the Nats-Msg-Id of such a run's request, so that JetStream's
// duplicate window drops the message of a re-sent event too.
func ObjectKey(forge workflows.Forge, object, workflow string) string {
	return string(forge) + ":" + objectKVKey(forge, object, workflow) + ":" + workflow
}

// objectKVKey is the hookrun_deliveries key of a run's object: "o." and a
// digest (objects hold untrusted text). Delivery keys start with a forge
// name or "h.", so the two never meet.
func objectKVKey(forge workflows.Forge, object, workflow string) string {
	h := sha256.New()
	h.Write([]byte(forge))
	h.Write([]byte{0})
	h.Write([]byte(workflow))
	h.Write([]byte{0})
	h.Write([]byte(object))
	var sum [sha256.Size]byte
	return "o." + hex.EncodeToString(h.Sum(sum[:0]))
}

var kvSafe = regexp.MustCompile(`^[-_=a-zA-Z0-9]+$`)

// deliveryKVKey maps a delivery key to a hookrun_deliveries key: readable
// when its parts are KV-safe, else a hash.
func deliveryKVKey(forge workflows.Forge, delivery, workflow string) string {
	if kvSafe.MatchString(string(forge)) && kvSafe.MatchString(delivery) && kvSafe.MatchString(workflow) && len(delivery) <= 128 {
		return string(forge) + "." + delivery + "." + workflow
	}
	sum := sha256.Sum256([]byte(DeliveryKey(forge, delivery, workflow)))
	return "h." + hex.EncodeToString(sum[:])
}

// Run-request authentication (issue #24, 2b). Whoever reaches NATS can put
// a message on hookrun.runs.*; a runner must not take that for a decision
// of ingress. Every run request therefore carries, in the NATS header
// HeaderMAC, an HMAC-SHA256 that the publisher (ingress: webhook
// deliveries, API starts, re-runs, replays, /retry, Slack; all of them go
// through PublishDelivery) computes with Config.RequestKey over
//
//	"hookrun-run-request-v1" 0x00 subject 0x00 body
//
// where body is the exact message data (the JSON RunRequest; it names the
// workflow, the run id, the event, and for a large webhook body the
// hookrun_bodies object and its SHA-256, RunRequest.BodyDigest). The
// consumer checks it, in constant time, on the bytes it received before it
// decodes, reconciles, reads a stored body or calls the handler. A request
// whose authenticator is missing or wrong is terminated (JetStream's
// term-with-reason, which also removes it from the work queue), logged
// and counted (ConsumerObserver.Unauthenticated): nothing in it is
// trusted, its run id included, so no run record is written or changed
// (a forged request naming a real run's id leaves that run alone). The key
// never travels, never appears in a log, and only ingress and runners
// hold it.

// HeaderMAC is the NATS header of a run request's authenticator: the
// lower-case hex HMAC-SHA256 described above.
const HeaderMAC = "Hookrun-Mac"

// MinRequestKey is the shortest Config.RequestKey accepted, in bytes.
const MinRequestKey = 32

// macDomain separates run-request MACs from any other use of the key.
const macDomain = "hookrun-run-request-v1"

// ErrUnauthenticated: a run request without a valid authenticator.
var ErrUnauthenticated = errors.New("run request not authenticated")

// macer computes and checks run-request authenticators with one key,
// recycling the HMAC states and their scratch space.
type macer struct {
	pool sync.Pool // of *macState
}

// macState is one HMAC state and the buffer its input prefix and sum are
// written into.
type macState struct {
	h   hash.Hash
	buf []byte
}

func newMacer(key []byte) *macer {
	if len(key) == 0 {
		return nil
	}
	k := append([]byte(nil), key...)
	m := &macer{}
	m.pool.New = func() any { return &macState{h: hmac.New(sha256.New, k), buf: make([]byte, 0, 128)} }
	return m
}

// sum writes the raw MAC of (subject, body) into out.
func (m *macer) sum(out *[sha256.Size]byte, subject string, body []byte) {
	s := m.pool.Get().(*macState)
	s.h.Reset()
	s.buf = append(append(append(append(s.buf[:0], macDomain...), 0), subject...), 0)
	s.h.Write(s.buf)
	s.h.Write(body)
	s.buf = s.h.Sum(s.buf[:0])
	copy(out[:], s.buf)
	m.pool.Put(s)
}

// header is the HeaderMAC value of (subject, body).
func (m *macer) header(subject string, body []byte) string {
	var raw [sha256.Size]byte
	var out [2 * sha256.Size]byte
	m.sum(&raw, subject, body)
	hex.Encode(out[:], raw[:])
	return string(out[:])
}

// verify checks the HeaderMAC value got against (subject, body).
func (m *macer) verify(subject string, body []byte, got string) error {
	if m == nil {
		return fmt.Errorf("%w: this process has no request key", ErrUnauthenticated)
	}
	if got == "" {
		return fmt.Errorf("%w: no %s header", ErrUnauthenticated, HeaderMAC)
	}
	var want [sha256.Size]byte
	var mac [sha256.Size]byte
	if len(got) != 2*sha256.Size {
		return fmt.Errorf("%w: malformed %s header", ErrUnauthenticated, HeaderMAC)
	}
	if _, err := hex.Decode(mac[:], []byte(got)); err != nil {
		return fmt.Errorf("%w: malformed %s header", ErrUnauthenticated, HeaderMAC)
	}
	m.sum(&want, subject, body)
	if !hmac.Equal(want[:], mac[:]) {
		return fmt.Errorf("%w: wrong %s (another key, or the request was changed)", ErrUnauthenticated, HeaderMAC)
	}
	return nil
}

// bodyDigest is RunRequest.BodyDigest of a webhook body.
func bodyDigest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// The trace context of a delivery travels with each of its run messages as
// W3C Trace Context headers (traceparent, tracestate): PublishDelivery
// writes the context of its caller's span, the consumer hands it to the
// handler as the remote parent. Without a span there is no header and
// nothing to read.
var traceContext propagation.TraceContext

// headerCarrier reads and writes NATS headers under their exact keys (NATS
// headers are case-sensitive; W3C names them in lower case).
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { h[key] = []string{value} }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// injectTrace writes the trace context of ctx's span into h; nothing
// without a sampled or unsampled span.
func injectTrace(ctx context.Context, h nats.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		traceContext.Inject(ctx, headerCarrier(h))
	}
}

// extractTrace returns ctx carrying the remote span context of h, or ctx
// itself when h has none.
func extractTrace(ctx context.Context, h nats.Header) context.Context {
	if len(h[traceparentHeader]) == 0 {
		return ctx
	}
	return traceContext.Extract(ctx, headerCarrier(h))
}

const traceparentHeader = "traceparent"

// TraceID is the id of the trace ctx's span is in, "" without one.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// The splice of encodeRunRequest relies on the JSON layout of RunRequest:
// its event object is directly followed by the field spliceNextField
// (always present), and the event's Raw field is spliceRawField, omitted
// when empty, so that the spliced key is the event's only one of that
// name. TestSpliceLayout guards both.
const (
	spliceNextField = "attempt"
	spliceRawField  = "raw"

	spliceEventEnd = `},"` + spliceNextField + `":`
	spliceRawKey   = `,"` + spliceRawField + `":`
)

// encodeRunRequest is json.Marshal(req) without the cost of re-validating
// and compacting Event.Raw: encoding/json runs every json.RawMessage through
// its validator and compactor, which for a 25 KB webhook body was the
// largest single cost of a publish. Raw is spliced in as it is; it must be
// valid JSON, which it is when ingress parsed it (an invalid Raw falls back
// to json.Marshal, which reports it).
func encodeRunRequest(req *RunRequest) ([]byte, error) {
	return appendRunRequest(nil, req)
}

// appendRunRequest is encodeRunRequest appending to dst.
func appendRunRequest(dst []byte, req *RunRequest) ([]byte, error) {
	raw := req.Event.Raw
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return json.Marshal(req)
	}
	r := *req
	r.Event.Raw = nil
	data, err := json.Marshal(&r)
	if err != nil {
		return nil, err
	}
	// A string inside the event cannot produce the bytes spliceEventEnd
	// (its quotes are escaped), so their last occurrence closes the event.
	end := bytes.LastIndex(data, []byte(spliceEventEnd))
	if end < 0 {
		return json.Marshal(req)
	}
	out := slices.Grow(dst, len(data)+len(spliceRawKey)+len(raw))
	out = append(out, data[:end]...)
	out = append(out, spliceRawKey...)
	out = append(out, raw...)
	out = append(out, data[end:]...)
	return out, nil
}

// A ULID (github.com/ulid/spec): 48 bits of Unix milliseconds and 80 random
// bits, as 26 characters of Crockford's base32, so that the string order is
// the creation order. Ids made in the same millisecond by this process
// increment the random part (the spec's monotonic mode) and stay ordered.
// Written here rather than imported: the package hookrun used pulled in
// database/sql, whose init every command paid for at start-up.

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var ulidState struct {
	sync.Mutex
	ms   uint64
	rand [10]byte
}

// newULID returns the ULID of t.
func newULID(t time.Time) string {
	ms := uint64(t.UnixMilli())
	ulidState.Lock()
	if ms <= ulidState.ms {
		// Same (or a backwards-stepped) millisecond: keep the last
		// one's time and increment its randomness.
		ms = ulidState.ms
		incrementBytes(&ulidState.rand)
	} else {
		ulidState.ms = ms
		if _, err := rand.Read(ulidState.rand[:]); err != nil {
			panic("reading random bytes: " + err.Error()) // crypto/rand does not fail on Linux
		}
	}
	var id [16]byte
	binary.BigEndian.PutUint16(id[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(id[2:6], uint32(ms))
	copy(id[6:], ulidState.rand[:])
	ulidState.Unlock()
	return encodeULID(id)
}

// incrementBytes adds one to a big-endian number (wrapping at the top,
// which 2^80 ids in one millisecond would need).
func incrementBytes(b *[10]byte) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return
		}
	}
}

// encodeULID writes 128 bits as 26 base32 digits, 5 bits each, most
// significant first (the first digit carries the top 3 bits).
func encodeULID(id [16]byte) string {
	hi := binary.BigEndian.Uint64(id[0:8])
	lo := binary.BigEndian.Uint64(id[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// RunIDTime is when the run with ULID id was made (the id's 48 bits of
// milliseconds); false when id is not a ULID. Case does not matter, as
// for Crockford's base32 (sandbox names carry run ids in lowercase).
func RunIDTime(id string) (time.Time, bool) {
	if len(id) != 26 {
		return time.Time{}, false
	}
	var hi, lo uint64
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		d := strings.IndexByte(crockford, c)
		if d < 0 {
			return time.Time{}, false
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(d)
	}
	ms := hi >> 16 // the top 48 of the 128 bits
	return time.UnixMilli(int64(ms)).UTC(), true
}
