package ingress

import (
	"github.com/hookrun/hookrun/providers/forge"
)

// ErrUnhandledEvent is wrapped by a forge's Normalize when the forge sent
// an event type hookrun does not turn into runs (a ping, a check run, a
// pipeline). The webhook routes answer such events with 202 and no runs.
// It is forge.ErrUnhandledEvent.
var ErrUnhandledEvent = forge.ErrUnhandledEvent

// ErrMalformedPayload is wrapped by a forge's Normalize when the body
// cannot be parsed, or lacks what the event type needs. The webhook routes
// answer it with 400. It is forge.ErrMalformedPayload.
var ErrMalformedPayload = forge.ErrMalformedPayload
