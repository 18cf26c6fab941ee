package forgetest

import (
	"bytes"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/workflows"
)

// WebhookHarness is one forge's webhooks under test (forge.Webhooks).
type WebhookHarness struct {
	// Name is the forge's name.
	Name workflows.Forge
	// New builds the forge with its webhooks enabled or not, verified with
	// secrets (or tokens); no API credentials.
	New func(t *testing.T, enabled bool, secrets ...string) forge.Forge
	// Headers are what the forge sends with body: the event's header
	// (none when event is ""), the delivery's (none when id is ""), the
	// signature or token under secret (none when secret is "").
	Headers func(event, id, secret string, body []byte) http.Header
	// Event and Body are a delivery the forge handles; Kind is the kind
	// it normalizes to.
	Event string
	Body  []byte
	Kind  workflows.Kind
	// Ping is the forge's ping event, "" when it has none.
	Ping string
	// SignsBody: the forge's check covers the body (an HMAC), not only a
	// token.
	SignsBody bool
}

// RunWebhooks runs the webhook half of the suite: the route's switch,
// verification with rotated secrets (and ErrNoSecret without any), the
// event and delivery headers, normalization and its two errors, the ping.
func RunWebhooks(t *testing.T, h WebhookHarness) {
	t.Helper()
	const secret, old = "forgetest-current-secret", "forgetest-old-secret"
	t.Run("Enabled", func(t *testing.T) {
		if h.New(t, false, secret).HookEnabled() {
			t.Error("webhooks disabled, yet HookEnabled")
		}
		f := h.New(t, true, secret)
		if !f.HookEnabled() || !forge.NewRegistry(f).Get(h.Name).HookEnabled() {
			t.Error("webhooks enabled, yet not HookEnabled (or not through the registry)")
		}
	})
	t.Run("Verify", func(t *testing.T) {
		f := h.New(t, true, old, secret)
		for _, s := range []string{secret, old} {
			if err := f.Verify(h.Headers(h.Event, "d-1", s, h.Body), h.Body); err != nil {
				t.Errorf("signed with a configured secret: %v", err)
			}
		}
		signed := h.Headers(h.Event, "d-1", secret, h.Body)
		refusals := map[string]error{
			"other secret":    f.Verify(h.Headers(h.Event, "d-1", "forgetest-wrong-secret", h.Body), h.Body),
			"no signature":    f.Verify(h.Headers(h.Event, "d-1", "", h.Body), h.Body),
			"a secret's tail": f.Verify(h.Headers(h.Event, "d-1", secret[1:], h.Body), h.Body),
		}
		if h.SignsBody {
			refusals["changed body"] = f.Verify(signed, append(bytes.Clone(h.Body), ' '))
		}
		for name, err := range refusals {
			if err == nil || errors.Is(err, forge.ErrNoSecret) {
				t.Errorf("%s: Verify %v, want a refusal", name, err)
			} else if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), old) {
				t.Errorf("%s: the refusal %q names a secret", name, err)
			}
		}
		if err := h.New(t, true).Verify(h.Headers(h.Event, "d-1", secret, h.Body), h.Body); !errors.Is(err, forge.ErrNoSecret) {
			t.Errorf("without secrets: Verify %v, want ErrNoSecret", err)
		}
	})
	t.Run("Headers", func(t *testing.T) {
		f := h.New(t, true, secret)
		hd := h.Headers(h.Event, "forgetest-delivery-1", secret, h.Body)
		if got := f.EventName(hd); got != h.Event {
			t.Errorf("EventName %q, want %q", got, h.Event)
		}
		if id, err := f.DeliveryID(hd, h.Body); err != nil || id != "forgetest-delivery-1" {
			t.Errorf("DeliveryID %q, %v; want forgetest-delivery-1", id, err)
		}
		noEvent := h.Headers("", "forgetest-delivery-1", secret, h.Body)
		if f.EventName(noEvent) != "" {
			t.Errorf("EventName of a delivery without the event header: %q", f.EventName(noEvent))
		}
		if _, err := f.DeliveryID(noEvent, h.Body); !errors.Is(err, forge.ErrMissingHeader) || !strings.HasPrefix(err.Error(), "missing ") {
			t.Errorf("DeliveryID without the event header: %v, want ErrMissingHeader saying what is missing", err)
		}
	})
	t.Run("Normalize", func(t *testing.T) {
		f := h.New(t, true, secret)
		ev, err := f.Normalize(h.Event, h.Body, "forgetest-delivery-2")
		if err != nil {
			t.Fatalf("Normalize: %v", err)
		}
		if ev.Forge != h.Name || ev.DeliveryID != "forgetest-delivery-2" || ev.Kind != h.Kind || len(ev.Raw) == 0 || &ev.Raw[0] != &h.Body[0] {
			t.Errorf("event forge %q delivery %q kind %q (Raw the body itself: %v), want %q, forgetest-delivery-2, %q",
				ev.Forge, ev.DeliveryID, ev.Kind, len(ev.Raw) > 0 && &ev.Raw[0] == &h.Body[0], h.Name, h.Kind)
		}
		if _, err := f.Normalize("forgetest_no_such_event", h.Body, "d"); !errors.Is(err, forge.ErrUnhandledEvent) {
			t.Errorf("an unknown event: %v, want ErrUnhandledEvent", err)
		}
		if _, err := f.Normalize(h.Event, []byte(`[`), "d"); !errors.Is(err, forge.ErrMalformedPayload) {
			t.Errorf("a body that does not parse: %v, want ErrMalformedPayload", err)
		}
		if !slices.Contains(f.Events(), h.Event) {
			t.Errorf("Events %v lack %q", f.Events(), h.Event)
		}
	})
	t.Run("Ping", func(t *testing.T) {
		f := h.New(t, true, secret)
		if f.Ping(h.Event) {
			t.Errorf("%q is taken for a ping", h.Event)
		}
		if h.Ping == "" {
			return
		}
		if !f.Ping(h.Ping) || !slices.Contains(f.Events(), h.Ping) {
			t.Errorf("Ping(%q) %v, Events %v: want the ping known", h.Ping, f.Ping(h.Ping), f.Events())
		}
		if _, err := f.Normalize(h.Ping, []byte(`{"zen":"x"}`), "d"); !errors.Is(err, forge.ErrUnhandledEvent) {
			t.Errorf("Normalize of the ping: %v, want ErrUnhandledEvent", err)
		}
	})
}

// MissingPart is a payload of Event without a part its kind needs, and
// the error (hookbody's ErrNo...) that names the part.
type MissingPart struct {
	Event, Body string
	Want        error
}

// Missing is the MissingPart of event whose body lacks the part want names.
func Missing(event, body string, want error) MissingPart {
	return MissingPart{Event: event, Body: body, Want: want}
}

// CheckMissingParts checks that normalize (a forge's Normalize) refuses
// each payload as malformed (forge.ErrMalformedPayload) and names the
// missing part.
func CheckMissingParts(t *testing.T, normalize func(event string, body []byte, deliveryID string) (*workflows.Event, error), parts ...MissingPart) {
	t.Helper()
	for _, p := range parts {
		if _, err := normalize(p.Event, []byte(p.Body), "d"); !errors.Is(err, forge.ErrMalformedPayload) || !errors.Is(err, p.Want) {
			t.Errorf("%s %s: err = %v, want malformed: %v", p.Event, p.Body, err, p.Want)
		}
	}
}
