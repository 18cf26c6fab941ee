package ingress

import (
	"fmt"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// ErrUnhandledEvent is wrapped by Normalize when the forge sent an event type
// hookrun does not turn into runs (GitHub "ping" or "check_run", GitLab
// "Pipeline Hook", ...). The webhook routes answer such events with 202 and
// no runs. It is forge.ErrUnhandledEvent, which a forge's own normalizer
// wraps.
var ErrUnhandledEvent = forge.ErrUnhandledEvent

// ErrMalformedPayload is wrapped by Normalize when the forge's library cannot
// parse the body, or the body lacks what the event type needs. The webhook
// routes answer it with 400. It is forge.ErrMalformedPayload.
var ErrMalformedPayload = forge.ErrMalformedPayload

// Association values that ingress derives itself where the forge payload
// carries none.
const (
	// associationNone is used for GitLab and Gitea events other than
	// pushes: their payloads say nothing about the author's role. The
	// server replaces it with the role the GitLab API reports once a
	// workflow matched (trust.go); without that, such events are
	// authorized only through `authorize.users` (or a workflow that lists
	// NONE).
	associationNone = "NONE"
	// associationPusher is used for push events on both forges: a push to
	// the repository a webhook is installed on needs write access to it,
	// which is what COLLABORATOR means on GitHub.
	associationPusher = "COLLABORATOR"
)

// Normalize turns one webhook body into a workflows.Event. eventName is
// GitHub's X-GitHub-Event value, GitLab's X-Gitlab-Event value or Gitea's
// X-Gitea-Event value; deliveryID
// becomes Event.DeliveryID (X-GitHub-Delivery, or the GitLab dedupe key). The
// body is kept as Event.Raw, not copied: the caller must not change it
// afterwards. An event type hookrun does not handle returns an
// error wrapping ErrUnhandledEvent; a body the forge library cannot parse
// returns an error wrapping ErrMalformedPayload.
func Normalize(forge workflows.Forge, eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	var (
		ev  *workflows.Event
		err error
	)
	switch forge {
	case workflows.GitHub:
		ev, err = normalizeGitHub(eventName, body)
	case workflows.GitLab:
		ev, err = normalizeGitLab(eventName, body)
	case workflows.Gitea:
		ev, err = normalizeGitea(eventName, body)
	default:
		return nil, fmt.Errorf("normalizing %q event: unknown forge %q", eventName, forge)
	}
	if err != nil {
		return nil, err
	}
	ev.Forge = forge
	ev.DeliveryID = deliveryID
	ev.Raw = body
	return ev, nil
}

func unhandled(forge workflows.Forge, eventName string) error {
	return fmt.Errorf("normalizing %s event %q: %w", forge, eventName, ErrUnhandledEvent)
}

func malformed(forge workflows.Forge, eventName string, err error) error {
	return fmt.Errorf("parsing %s event %q: %w: %w", forge, eventName, ErrMalformedPayload, err)
}
