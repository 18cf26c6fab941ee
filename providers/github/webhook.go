package github

import (
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
	headerEvent     = "X-GitHub-Event"
	headerDelivery  = "X-GitHub-Delivery"
	headerSignature = "X-Hub-Signature-256"
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

// HookEnabled reports whether POST /hooks/github is served.
func (f *Forge) HookEnabled() bool { return f.hook.enabled }

// EventName is X-GitHub-Event.
func (f *Forge) EventName(h http.Header) string { return h.Get(headerEvent) }

// DeliveryID is X-GitHub-Delivery.
func (f *Forge) DeliveryID(h http.Header, _ []byte) (string, error) {
	d := h.Get(headerDelivery)
	if d == "" || h.Get(headerEvent) == "" {
		return "", forge.MissingHeader("missing " + headerEvent + " or " + headerDelivery + " header")
	}
	return d, nil
}

// Verify checks X-Hub-Signature-256 ("sha256=<hex>") against the
// HMAC-SHA256 of body under each secret (forge.VerifyHMAC). Only SHA-256
// signatures are accepted; the legacy SHA-1 X-Hub-Signature is ignored.
func (f *Forge) Verify(h http.Header, body []byte) error {
	if len(f.hook.secrets) == 0 {
		return fmt.Errorf("enabled without a webhook secret: %w", forge.ErrNoSecret)
	}
	if !verifySignature(f.hook.secrets, h.Get(headerSignature), body) {
		return errSignature
	}
	return nil
}

var errSignature = errors.New("signature check failed")

// verifySignature checks an X-Hub-Signature-256 header against secrets.
func verifySignature(secrets [][]byte, header string, body []byte) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	return forge.VerifyHMAC(secrets, hexSig, body)
}

// Ping is GitHub's ping, sent when a webhook is created.
func (f *Forge) Ping(eventName string) bool { return eventName == ghPing }

// Events are the events the metrics name.
func (f *Forge) Events() []string {
	return []string{ghPing, ghPullRequest, ghIssueComment, ghIssues, ghPush}
}

// Normalize maps a GitHub delivery onto an Event (forge.Webhooks).
func (f *Forge) Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	return Normalize(eventName, body, deliveryID)
}

// Normalize turns one GitHub webhook body into an Event (normalizeGitHub):
// Forge github, DeliveryID deliveryID, Raw the body (not copied).
func Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	ev, err := normalizeGitHub(eventName, body)
	if err != nil {
		return nil, err
	}
	ev.Forge, ev.DeliveryID, ev.Raw = Name, deliveryID, body
	return ev, nil
}

// PushFiles reads a push payload's commits; GitHub's list is taken as cut
// at forge.PushCommitCap.
func (f *Forge) PushFiles(body []byte) ([]string, bool) { return pushFiles(body) }

func pushFiles(body []byte) ([]string, bool) {
	var p struct {
		Commits []forge.PushCommit `json:"commits"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false
	}
	return forge.PushFiles(p.Commits, nil)
}
