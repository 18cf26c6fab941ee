package gitlab

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/hookrun/hookrun/providers/internal/ratelimit"
)

// DefaultBaseURL is gitlab.com.
const DefaultBaseURL = "https://gitlab.com/"

// Config says how to reach GitLab and as whom.
type Config struct {
	// BaseURL is the instance URL ("https://gitlab.example.com/") or its API
	// root (".../api/v4/"); "" = gitlab.com. Self-managed instances work the
	// same way.
	BaseURL string
	// Token is a personal, project or group access token with the api scope,
	// sent as PRIVATE-TOKEN. Never logged.
	Token string
	// BotUserID is the user id whose notes may hold a workflow's marker;
	// 0 = discovered once with GET /user.
	BotUserID int64
	// RunURL links the run from the note and the commit status (target_url);
	// "{run}" is replaced by the run id. "" = no link.
	RunURL string
	// MaxWait bounds the total rate-limit wait of one request of a start or
	// progress report; the final report waits for as long as its context
	// allows. Default 1m; negative = never wait outside the final report.
	MaxWait time.Duration
	// Backoff is the first wait after a 429 that does not say when to retry;
	// it doubles on each further one. Default 1m.
	Backoff time.Duration
	// Transport sends the HTTP requests; nil = a clone of
	// http.DefaultTransport that waits at most 30 s for response headers.
	Transport http.RoundTripper
	// WrapTransport, when set, wraps Transport (its default included)
	// once: internal/app gives each API call a trace span with it.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// WebhookEnabled serves POST /hooks/gitlab (ingress); false: the route
	// answers 404. The forge is registered either way (its git origin).
	WebhookEnabled bool
	// WebhookTokens are the accepted X-Gitlab-Token values: a delivery
	// matching any of them is accepted (several allow rotation). Empty: the
	// deliveries are accepted unverified only under --insecure-no-verify.
	// Never logged.
	WebhookTokens []string
	// Logger receives retries and fallbacks (never the token); nil = slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	ratelimit.ConfigDefaults(&c.MaxWait, &c.Backoff, &c.Transport, &c.Logger)
	if c.WrapTransport != nil {
		c.Transport, c.WrapTransport = c.WrapTransport(c.Transport), nil
	}
}

// Validate reports what is wrong with c (after defaults are set). Errors
// never include the token.
func (c *Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("gitlab base_url %q: want an http(s) URL such as %s", c.BaseURL, DefaultBaseURL))
	}
	if c.Token == "" {
		errs = append(errs, errors.New("gitlab: set a token"))
	}
	return errors.Join(errs...)
}
