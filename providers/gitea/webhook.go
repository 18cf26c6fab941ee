package gitea

import (
	"net/http"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/hookbody"
	"github.com/hookrun/hookrun/workflows"
)

// Webhook header names. Gitea and Forgejo also send the headers of the
// forge their API is modeled on; their own are the ones read.
const (
	headerEvent     = "X-Gitea-Event"
	headerDelivery  = "X-Gitea-Delivery"
	headerSignature = "X-Gitea-Signature"
)

// hookSpec: Gitea signs its deliveries; it has no ping (its test delivery
// is a push); total_commits says whether a push's commits are all listed.
var hookSpec = forge.HookSpec{Name: Name, EventHeader: headerEvent, PushTotal: "total_commits",
	EventNames: []string{hookbody.EventPullRequest, hookbody.EventIssueComment, hookbody.EventIssues, hookbody.EventPush, gtReviewApproved, gtReviewRejected, gtReviewComment},
	Parse:      normalizeGitea}

// DeliveryID is X-Gitea-Delivery.
func (f *Forge) DeliveryID(h http.Header, _ []byte) (string, error) {
	return f.Hook.HeaderDeliveryID(h, headerDelivery)
}

// Verify checks X-Gitea-Signature (Gitea's and Forgejo's: the hex
// HMAC-SHA256 of body, without a "sha256=" prefix) against each
// secret (forge.VerifyHMAC).
func (f *Forge) Verify(h http.Header, body []byte) error {
	return f.Hook.VerifySignature(h.Get(headerSignature), body)
}

// Normalize maps a Gitea delivery onto an Event (forge.Webhooks) without
// reading or writing the label memory: a label_updated is labeled with
// LabelActionUnknown until RecallLabels tells which label changed.
func (f *Forge) Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	return Normalize(eventName, body, deliveryID)
}

// Normalize turns one Gitea (or Forgejo) webhook body into an Event
// (normalizeGitea): Forge gitea, DeliveryID deliveryID, Raw the body (not
// copied). A label_updated is labeled with LabelActionUnknown: which label
// changed takes the labels seen before (Forge.RecallLabels).
func Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	ev, err := normalizeGitea(eventName, body)
	if err == nil {
		labelChange(ev, nil, false)
	}
	return forge.Delivered(Name, ev, err, deliveryID, body)
}
