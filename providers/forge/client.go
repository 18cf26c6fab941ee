package forge

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/hookrun/hookrun/providers/internal/ratelimit"
)

// Client is how a forge's API client sends its requests: the rate-limit
// waits, the transport and the logger. The forges' configurations embed
// it; SetDefaults fills it in.
type Client struct {
	// MaxWait bounds the total rate-limit wait of one request of a start or
	// progress report (those are superseded soon anyway); the final report
	// waits for as long as its context allows. Default 1m; negative = never
	// wait outside the final report.
	MaxWait time.Duration
	// Backoff is the first wait after a rate-limit answer that does not say
	// when to retry (a secondary limit asks for at least a minute); it
	// doubles on each further answer. Default 1m.
	Backoff time.Duration
	// Transport sends the HTTP requests; nil = a clone of
	// http.DefaultTransport that waits at most 30 s for response headers.
	Transport http.RoundTripper
	// WrapTransport, when set, wraps Transport (its default included)
	// once: internal/app gives each API call a trace span with it.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Logger receives retries and fallbacks (never tokens); nil =
	// slog.Default().
	Logger *slog.Logger
}

// SetDefaults fills in the defaults (ratelimit.ConfigDefaults) and wraps
// Transport once with WrapTransport.
func (c *Client) SetDefaults() {
	ratelimit.ConfigDefaults(&c.MaxWait, &c.Backoff, &c.Transport, &c.Logger)
	if c.WrapTransport != nil {
		c.Transport, c.WrapTransport = c.WrapTransport(c.Transport), nil
	}
}
