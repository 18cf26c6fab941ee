package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

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
	// authenticator covers this digest, reqauth.go). Optional and omitted
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
