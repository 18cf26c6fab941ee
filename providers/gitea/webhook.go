package gitea

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/ghpayload"
	"github.com/hookrun/hookrun/workflows"
)

// Webhook header names. Gitea and Forgejo also send X-GitHub-Event and
// GitHub's signatures; their own headers are the ones read.
const (
	headerEvent     = "X-Gitea-Event"
	headerDelivery  = "X-Gitea-Delivery"
	headerSignature = "X-Gitea-Signature"
)

// hook is the forge's webhook configuration (forge.Webhooks).
type hook struct {
	enabled bool
	secrets [][]byte
}

func newHook(enabled bool, secrets []string) (hook, error) {
	for i, s := range secrets {
		if s == "" {
			return hook{}, fmt.Errorf("checking %s webhook secrets: entry %d is empty", Name, i)
		}
	}
	return hook{enabled: enabled, secrets: forge.Secrets(secrets)}, nil
}

// HookEnabled reports whether POST /hooks/gitea is served.
func (f *Forge) HookEnabled() bool { return f.hook.enabled }

// EventName is X-Gitea-Event.
func (f *Forge) EventName(h http.Header) string { return h.Get(headerEvent) }

// DeliveryID is X-Gitea-Delivery.
func (f *Forge) DeliveryID(h http.Header, _ []byte) (string, error) {
	d := h.Get(headerDelivery)
	if d == "" || h.Get(headerEvent) == "" {
		return "", forge.MissingHeader("missing " + headerEvent + " or " + headerDelivery + " header")
	}
	return d, nil
}

var errSignature = errors.New("signature check failed")

// Verify checks X-Gitea-Signature (Gitea's and Forgejo's: the hex
// HMAC-SHA256 of body, without GitHub's "sha256=" prefix) against each
// secret (forge.VerifyHMAC).
func (f *Forge) Verify(h http.Header, body []byte) error {
	if len(f.hook.secrets) == 0 {
		return fmt.Errorf("enabled without a webhook secret: %w", forge.ErrNoSecret)
	}
	if !forge.VerifyHMAC(f.hook.secrets, h.Get(headerSignature), body) {
		return errSignature
	}
	return nil
}

// Ping is false: Gitea's test delivery is a push.
func (f *Forge) Ping(string) bool { return false }

// Events are the events the metrics name.
func (f *Forge) Events() []string {
	return []string{ghpayload.EventPullRequest, ghpayload.EventIssueComment, ghpayload.EventIssues, ghpayload.EventPush, gtReviewApproved, gtReviewRejected, gtReviewComment}
}

// Normalize maps a Gitea delivery onto an Event (forge.Webhooks).
func (f *Forge) Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	return Normalize(eventName, body, deliveryID)
}

// Normalize turns one Gitea (or Forgejo) webhook body into an Event
// (normalizeGitea): Forge gitea, DeliveryID deliveryID, Raw the body (not
// copied).
func Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	ev, err := normalizeGitea(eventName, body)
	if err != nil {
		return nil, err
	}
	ev.Forge, ev.DeliveryID, ev.Raw = Name, deliveryID, body
	return ev, nil
}

// PushFiles reads a push payload's commits; total_commits says whether
// they are all listed.
func (f *Forge) PushFiles(body []byte) ([]string, bool) { return pushFiles(body) }

func pushFiles(body []byte) ([]string, bool) {
	var p struct {
		Commits []forge.PushCommit `json:"commits"`
		Total   *int               `json:"total_commits"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false
	}
	return forge.PushFiles(p.Commits, p.Total)
}
