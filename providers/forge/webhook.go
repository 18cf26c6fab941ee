package forge

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hookrun/hookrun/workflows"
)

// ErrNoSecret is wrapped by Webhooks.Verify of a forge that has no webhook
// secret (or token) to verify with: ingress accepts its deliveries
// unverified only under --insecure-no-verify, and refuses to start
// otherwise.
var ErrNoSecret = errors.New("no webhook secret to verify deliveries with")

// ErrMissingHeader is wrapped by Webhooks.DeliveryID when the delivery
// lacks the header naming its event or the one naming the delivery; the
// error's text is the 400's.
var ErrMissingHeader = errors.New("missing header")

// MissingHeader is the error of Webhooks.DeliveryID for a delivery that
// lacks a header: its text is text (the 400's), and it wraps
// ErrMissingHeader.
func MissingHeader(text string) error { return missingHeader(text) }

type missingHeader string

func (m missingHeader) Error() string      { return string(m) }
func (missingHeader) Is(target error) bool { return target == ErrMissingHeader }

// Association values a normalizer sets itself where the forge's payload
// carries none.
const (
	// AssociationNone is the author's role of an event whose payload says
	// nothing about it: ingress replaces it with the role the forge's API
	// reports once a workflow matched (Lookups.Association); without that,
	// such events are authorized only through `authorize.users` (or a
	// workflow that lists NONE).
	AssociationNone = "NONE"
	// AssociationPusher is the role of a push's author on every forge: a
	// push to the repository a webhook is installed on needs write access
	// to it, which is what COLLABORATOR means.
	AssociationPusher = "COLLABORATOR"
)

// Webhooks is how a forge's deliveries reach hookrun: ingress serves POST
// /hooks/<Name> for every registered forge and asks the forge what differs
// (the headers, the signature or token, the payload's shape); the answers
// (401, 400, 202, the ping's 200) are ingress's, the same for every forge.
type Webhooks interface {
	// HookEnabled reports whether the webhook route is served; a route
	// that is not answers 404.
	HookEnabled() bool
	// EventName is the event type the delivery's headers name, "" when
	// they name none.
	EventName(h http.Header) string
	// DeliveryID is the delivery's dedupe key (Event.DeliveryID). An error
	// wrapping ErrMissingHeader, whose text the 400 answer carries, when
	// the event or the delivery header is missing.
	DeliveryID(h http.Header, body []byte) (string, error)
	// Verify checks the delivery's signature or token against each
	// configured secret (several allow rotation) in constant time: nil
	// when one matches; an error wrapping ErrNoSecret when the forge has
	// none; another error (which names no secret) when none matches.
	Verify(h http.Header, body []byte) error
	// Ping reports whether eventName is the forge's ping, answered 200
	// "pong" without runs.
	Ping(eventName string) bool
	// Events are the event names the forge handles, its ping included:
	// the metrics name these, and count others as "other".
	Events() []string
	// Normalize turns a verified delivery into an Event: Forge is the
	// forge's name, DeliveryID deliveryID, Raw the body itself (the caller
	// must not change it afterwards). An event type hookrun does not handle
	// is an error wrapping ErrUnhandledEvent (the ping included); a body
	// that cannot be parsed, or lacks what its event needs, one wrapping
	// ErrMalformedPayload.
	Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error)
	// PushFiles are the files a push delivery's payload says its commits
	// touched, and whether that list is complete (else the compare API
	// is asked, Lookups.ChangedFiles).
	PushFiles(body []byte) (paths []string, complete bool)
}

// Unhandled is the error a normalizer of forge name returns for an event
// type it does not handle.
func Unhandled(name workflows.Forge, eventName string) error {
	return fmt.Errorf("normalizing %s event %q: %w", name, eventName, ErrUnhandledEvent)
}

// Malformed is the error a normalizer of forge name returns for a body it
// cannot parse (err says why).
func Malformed(name workflows.Forge, eventName string, err error) error {
	return fmt.Errorf("parsing %s event %q: %w: %w", name, eventName, ErrMalformedPayload, err)
}

// PushCommit is what a push payload lists of one commit: the paths it
// added, removed and modified (the forges hookrun knows alike).
type PushCommit struct {
	Added    []string `json:"added"`
	Removed  []string `json:"removed"`
	Modified []string `json:"modified"`
}

// PushCommitCap is how many commits a push payload lists at most when it
// does not say how many there were: past it the compare API tells the
// files.
const PushCommitCap = 20

// PushFiles are the paths commits touched, each once, and whether the
// payload listed every commit: total is the number of commits the payload
// says the push has, nil when it says none (the list is then taken as cut
// at PushCommitCap).
func PushFiles(commits []PushCommit, total *int) (paths []string, complete bool) {
	seen := map[string]bool{}
	for _, c := range commits {
		for _, l := range [][]string{c.Added, c.Removed, c.Modified} {
			for _, f := range l {
				if !seen[f] {
					seen[f] = true
					paths = append(paths, f)
				}
			}
		}
	}
	if total != nil {
		return paths, *total <= len(commits)
	}
	return paths, len(commits) < PushCommitCap
}

// HookEnabled of a forge that is not configured is false: its route
// answers 404.
func (n notConfigured) HookEnabled() bool            { return false }
func (n notConfigured) EventName(http.Header) string { return "" }
func (n notConfigured) DeliveryID(http.Header, []byte) (string, error) {
	return "", n.err()
}
func (n notConfigured) Verify(http.Header, []byte) error { return n.err() }
func (n notConfigured) Ping(string) bool                 { return false }
func (n notConfigured) Events() []string                 { return nil }
func (n notConfigured) Normalize(eventName string, _ []byte, _ string) (*workflows.Event, error) {
	return nil, fmt.Errorf("normalizing %q event: %w", eventName, n.err())
}
func (n notConfigured) PushFiles([]byte) ([]string, bool) { return nil, false }

// HookSpec is how a forge's deliveries look, what its Hook reads them
// with.
type HookSpec struct {
	// Name is the forge's; EventHeader the header naming a delivery's
	// event; Tokens whether deliveries carry a token (else an HMAC
	// signature).
	Name        workflows.Forge
	EventHeader string
	Tokens      bool
	// PingEvent is the name of the forge's ping event, "" when it has
	// none; EventNames the event names the metrics name.
	PingEvent  string
	EventNames []string
	// PushTotal is the key of a push payload that says how many commits
	// the push had, "" when the payload has none (PushFiles).
	PushTotal string
	// Parse turns a body of an event type into an Event, without Forge,
	// DeliveryID and Raw (Normalize sets them).
	Parse func(eventName string, body []byte) (*workflows.Event, error)
}

// Ping reports whether eventName is the forge's ping.
func (s HookSpec) Ping(eventName string) bool { return s.PingEvent != "" && eventName == s.PingEvent }

// Events are the event names the metrics name.
func (s HookSpec) Events() []string { return s.EventNames }

// Normalize turns a delivery into an Event (Parse): Forge the forge's
// name, DeliveryID deliveryID, Raw the body (not copied).
func (s HookSpec) Normalize(eventName string, body []byte, deliveryID string) (*workflows.Event, error) {
	ev, err := s.Parse(eventName, body)
	return Delivered(s.Name, ev, err, deliveryID, body)
}

// PushFiles reads a push payload's commits; the count under PushTotal
// says whether they are all listed, else the list is taken as cut at
// PushCommitCap. A payload that does not parse has none.
func (s HookSpec) PushFiles(body []byte) ([]string, bool) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false
	}
	var commits []PushCommit
	var total *int
	if err := unmarshalPresent(p["commits"], &commits); err != nil {
		return nil, false
	}
	if s.PushTotal != "" {
		if err := unmarshalPresent(p[s.PushTotal], &total); err != nil {
			return nil, false
		}
	}
	return PushFiles(commits, total)
}

// unmarshalPresent decodes raw into v; a missing value leaves v as it is.
func unmarshalPresent(raw json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(raw, v)
}

// Hook is what every forge's Webhooks share: whether the route is served,
// the forge's HookSpec (Ping, Events, Normalize, PushFiles), and the
// secrets its deliveries are signed with (HMAC) or the digests of the
// tokens they carry. A forge embeds it and reads its own headers for the
// rest (DeliveryID, Verify).
type Hook struct {
	HookSpec
	enabled bool
	secrets [][]byte
	tokens  [][sha256.Size]byte
}

// Webhook is the webhook part of a forge's configuration: each forge's
// Config embeds it.
type Webhook struct {
	// WebhookEnabled serves the forge's route, POST /hooks/<forge>
	// (ingress); false: the route answers 404. The forge is registered
	// either way (its git origin).
	WebhookEnabled bool
	// WebhookSecrets are what deliveries are verified against: the secrets
	// of their signature, or with HookSpec.Tokens the tokens the forge
	// sends. A delivery matching any of them is accepted (several allow
	// rotation). Empty: the deliveries are accepted unverified only under
	// --insecure-no-verify. Never logged.
	WebhookSecrets []string
}

// WebhookConfig is w: a Config that embeds Webhook is Configured.
func (w Webhook) WebhookConfig() Webhook { return w }

// NewHook is the Hook of spec: enabled, and the configured secrets, or
// with spec.Tokens the tokens (none may be empty).
func NewHook(spec HookSpec, w Webhook) (Hook, error) {
	enabled, secrets := w.WebhookEnabled, w.WebhookSecrets
	what := "secrets"
	if spec.Tokens {
		what = "tokens"
	}
	for i, s := range secrets {
		if s == "" {
			return Hook{}, fmt.Errorf("checking %s webhook %s: entry %d is empty", spec.Name, what, i)
		}
	}
	h := Hook{HookSpec: spec, enabled: enabled}
	if spec.Tokens {
		h.tokens = TokenDigests(secrets)
	} else {
		h.secrets = Secrets(secrets)
	}
	return h, nil
}

// HookEnabled reports whether POST /hooks/<name> is served.
func (h Hook) HookEnabled() bool { return h.enabled }

// EventName is the event header's value.
func (h Hook) EventName(hd http.Header) string { return hd.Get(h.EventHeader) }

// HeaderDeliveryID is the delivery id the header deliveryHeader carries;
// an error wrapping ErrMissingHeader when it or the event header is
// missing.
func (h Hook) HeaderDeliveryID(hd http.Header, deliveryHeader string) (string, error) {
	d := hd.Get(deliveryHeader)
	if d == "" || hd.Get(h.EventHeader) == "" {
		return "", MissingHeader("missing " + h.EventHeader + " or " + deliveryHeader + " header")
	}
	return d, nil
}

// errSignature and errToken are Verify's answers for a delivery no secret
// or token matches (they name none).
var (
	errSignature = errors.New("signature check failed")
	errToken     = errors.New("token check failed")
)

// VerifySignature checks hexSig, the hex HMAC-SHA256 of body, against
// each secret (VerifyHMAC): Webhooks.Verify of a forge that signs.
func (h Hook) VerifySignature(hexSig string, body []byte) error {
	if len(h.secrets) == 0 {
		return fmt.Errorf("enabled without a webhook secret: %w", ErrNoSecret)
	}
	if !VerifyHMAC(h.secrets, hexSig, body) {
		return errSignature
	}
	return nil
}

// VerifyToken compares token with each configured token (VerifyToken):
// Webhooks.Verify of a forge that sends a token.
func (h Hook) VerifyToken(token string) error {
	if len(h.tokens) == 0 {
		return fmt.Errorf("enabled without a webhook token: %w", ErrNoSecret)
	}
	if !VerifyToken(h.tokens, token) {
		return errToken
	}
	return nil
}

// Delivered completes the Event a normalizer made of a delivery of forge
// name: Forge, DeliveryID and Raw (the body, not copied).
func Delivered(name workflows.Forge, ev *workflows.Event, err error, deliveryID string, body []byte) (*workflows.Event, error) {
	if err != nil {
		return nil, err
	}
	ev.Forge, ev.DeliveryID, ev.Raw = name, deliveryID, body
	return ev, nil
}
