package gitlab

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// Webhook header names.
const (
	headerEvent          = "X-Gitlab-Event"
	headerToken          = "X-Gitlab-Token"
	headerUUID           = "X-Gitlab-Event-UUID"
	headerIdempotencyKey = "Idempotency-Key"
)

// hookSpec: GitLab's deliveries carry a token, compared by digest in
// constant time (forge.VerifyToken); it has no ping (its test deliveries
// are ordinary events); total_commits_count says whether a push's commits
// are all listed.
var hookSpec = forge.HookSpec{Name: Name, EventHeader: headerEvent, Tokens: true, PushTotal: "total_commits_count",
	EventNames: []string{glMergeRequest, glNote, glIssue, glPush, glTagPush}, Parse: normalizeGitLab}

// DeliveryID is the dedupe key of a GitLab delivery (deliveryKey); it is
// missing only when X-Gitlab-Event is.
func (f *Forge) DeliveryID(h http.Header, body []byte) (string, error) {
	if h.Get(headerEvent) == "" {
		return "", forge.MissingHeader("missing " + headerEvent + " header")
	}
	return deliveryKey(h, body), nil
}

// deliveryKey is the dedupe key of a GitLab delivery: Idempotency-Key
// (stable across GitLab's retries), else X-Gitlab-Event-UUID, else a digest
// of the body.
func deliveryKey(h http.Header, body []byte) string {
	if k := strings.TrimSpace(h.Get(headerIdempotencyKey)); k != "" {
		return k
	}
	if k := strings.TrimSpace(h.Get(headerUUID)); k != "" {
		return k
	}
	sum := sha256.Sum256(body)
	return "sha256-" + hex.EncodeToString(sum[:])
}

// Verify compares X-Gitlab-Token with each configured token
// (forge.VerifyToken).
func (f *Forge) Verify(h http.Header, _ []byte) error {
	return f.Hook.VerifyToken(h.Get(headerToken))
}

// Normalize turns one GitLab webhook body into an Event (normalizeGitLab):
// Forge gitlab, DeliveryID deliveryID, Raw the body (not copied).
func Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	return hookSpec.Normalize(eventName, body, deliveryID)
}

// pushFiles reads a push payload's commits (forge.HookSpec.PushFiles).
func pushFiles(body []byte) ([]string, bool) { return hookSpec.PushFiles(body) }
