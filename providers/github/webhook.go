package github

import (
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

// hookSpec: GitHub signs its deliveries and pings; its push payloads do
// not count their commits.
var hookSpec = forge.HookSpec{Name: Name, EventHeader: headerEvent, PingEvent: ghPing,
	EventNames: []string{ghPing, ghPullRequest, ghIssueComment, ghIssues, ghPush}, Parse: normalizeGitHub}

// DeliveryID is X-GitHub-Delivery.
func (f *Forge) DeliveryID(h http.Header, _ []byte) (string, error) {
	return f.Hook.HeaderDeliveryID(h, headerDelivery)
}

// Verify checks X-Hub-Signature-256 ("sha256=<hex>") against the
// HMAC-SHA256 of body under each secret (forge.VerifyHMAC). Only SHA-256
// signatures are accepted; the legacy SHA-1 X-Hub-Signature is ignored.
func (f *Forge) Verify(h http.Header, body []byte) error {
	return f.Hook.VerifySignature(signatureHex(h.Get(headerSignature)), body)
}

// signatureHex is the hex signature of an X-Hub-Signature-256 header; ""
// (which matches nothing) without its "sha256=" prefix.
func signatureHex(header string) string {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return ""
	}
	return hexSig
}

// Normalize turns one GitHub webhook body into an Event (normalizeGitHub):
// Forge github, DeliveryID deliveryID, Raw the body (not copied).
func Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	return hookSpec.Normalize(eventName, body, deliveryID)
}
