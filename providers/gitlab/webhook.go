package gitlab

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

// hook is the forge's webhook configuration (forge.Webhooks): the
// tokens' digests, compared in constant time (forge.VerifyToken).
type hook struct {
	enabled bool
	tokens  [][sha256.Size]byte
}

func newHook(enabled bool, tokens []string) (hook, error) {
	for i, t := range tokens {
		if t == "" {
			return hook{}, fmt.Errorf("checking %s webhook tokens: entry %d is empty", Name, i)
		}
	}
	return hook{enabled: enabled, tokens: forge.TokenDigests(tokens)}, nil
}

// HookEnabled reports whether POST /hooks/gitlab is served.
func (f *Forge) HookEnabled() bool { return f.hook.enabled }

// EventName is X-Gitlab-Event.
func (f *Forge) EventName(h http.Header) string { return h.Get(headerEvent) }

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

var errToken = errors.New("token check failed")

// Verify compares X-Gitlab-Token with each configured token
// (forge.VerifyToken).
func (f *Forge) Verify(h http.Header, _ []byte) error {
	if len(f.hook.tokens) == 0 {
		return fmt.Errorf("enabled without a webhook token: %w", forge.ErrNoSecret)
	}
	if !forge.VerifyToken(f.hook.tokens, h.Get(headerToken)) {
		return errToken
	}
	return nil
}

// Ping is false: GitLab's test deliveries are ordinary events.
func (f *Forge) Ping(string) bool { return false }

// Events are the events the metrics name.
func (f *Forge) Events() []string {
	return []string{glMergeRequest, glNote, glIssue, glPush, glTagPush}
}

// Normalize maps a GitLab delivery onto an Event (forge.Webhooks).
func (f *Forge) Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	return Normalize(eventName, body, deliveryID)
}

// Normalize turns one GitLab webhook body into an Event (normalizeGitLab):
// Forge gitlab, DeliveryID deliveryID, Raw the body (not copied).
func Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	ev, err := normalizeGitLab(eventName, body)
	if err != nil {
		return nil, err
	}
	ev.Forge, ev.DeliveryID, ev.Raw = Name, deliveryID, body
	return ev, nil
}

// PushFiles reads a push payload's commits; total_commits_count says
// whether they are all listed.
func (f *Forge) PushFiles(body []byte) ([]string, bool) { return pushFiles(body) }

func pushFiles(body []byte) ([]string, bool) {
	var p struct {
		Commits []forge.PushCommit `json:"commits"`
		Total   *int               `json:"total_commits_count"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false
	}
	return forge.PushFiles(p.Commits, p.Total)
}
