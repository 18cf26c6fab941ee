package github

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hookrun/hookrun/providers/internal/ratelimit"
	"github.com/hookrun/hookrun/workflows"
)

// DefaultAPIURL is the REST API root of github.com.
const DefaultAPIURL = "https://api.github.com/"

// Config says how to reach GitHub and as whom. Set either Token, or AppID
// and PrivateKey.
type Config struct {
	// Forge is the forge whose events this client reports on: github
	// (default), or gitea for providers/gitea (Gitea and Forgejo answer
	// GitHub's REST API for what hookrun uses, under /api/v1/, with
	// "Authorization: token" and no Apps).
	Forge workflows.Forge
	// APIURL is the REST API root, with a trailing slash: "" = github.com;
	// for GitHub Enterprise Server "https://ghe.example/api/v3/".
	APIURL string
	// Token authenticates as a user or bot account (classic or fine-grained
	// personal access token); sent as "Authorization: Bearer". Never logged.
	Token string
	// AppID is the GitHub App id; with PrivateKey, each event is reported
	// with an installation token for its Event.InstallationID.
	AppID int64
	// PrivateKey is the GitHub App private key, PEM (PKCS#1 or PKCS#8).
	PrivateKey []byte
	// BotLogin is the login whose comments may hold a workflow's marker.
	// "" = discovered: GET /user for a token, "<slug>[bot]" from GET /app for
	// an App.
	BotLogin string
	// RunURL links the run from the comment and the commit status
	// (target_url); "{run}" is replaced by the run id. "" = no link.
	RunURL string
	// MaxWait bounds the total rate-limit wait of one request of a start or
	// progress report (those are superseded soon anyway); the final report
	// waits for as long as its context allows. Default 1m; negative = never
	// wait outside the final report.
	MaxWait time.Duration
	// Backoff is the first wait after a rate-limit answer that does not say
	// when to retry (GitHub asks for at least a minute); it doubles on each
	// further answer. Default 1m.
	Backoff time.Duration
	// Transport sends the HTTP requests; nil = a clone of
	// http.DefaultTransport that waits at most 30 s for response headers.
	Transport http.RoundTripper
	// WrapTransport, when set, wraps Transport (its default included)
	// once: internal/app gives each API call a trace span with it.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// WebhookEnabled serves POST /hooks/github (ingress); false: the route
	// answers 404. The forge is registered either way (its git origin).
	WebhookEnabled bool
	// WebhookSecrets are the webhook secrets X-Hub-Signature-256 is checked against: a delivery
	// matching any of them is accepted (several allow rotation). Empty: the
	// deliveries are accepted unverified only under --insecure-no-verify.
	// Never logged.
	WebhookSecrets []string
	// Logger receives retries and fallbacks (never tokens); nil = slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Forge == "" {
		c.Forge = workflows.GitHub
	}
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	ratelimit.ConfigDefaults(&c.MaxWait, &c.Backoff, &c.Transport, &c.Logger)
	if c.WrapTransport != nil {
		c.Transport, c.WrapTransport = c.WrapTransport(c.Transport), nil
	}
}

// Validate reports what is wrong with c (after defaults are set). Errors
// never include the token or key.
func (c *Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("github api_url %q: want an http(s) URL such as %s", c.APIURL, DefaultAPIURL))
	}
	app := c.AppID != 0 || len(c.PrivateKey) > 0
	switch {
	case c.Forge != workflows.GitHub && c.Forge != workflows.Gitea:
		errs = append(errs, fmt.Errorf("github client: forge %q is neither github nor gitea", c.Forge))
	case c.Forge == workflows.Gitea && (c.Token == "" || app):
		errs = append(errs, errors.New("gitea: set a token (Gitea has no apps)"))
	case c.Token == "" && !app:
		errs = append(errs, errors.New("github: set a token, or an app id and private key"))
	case c.Token != "" && app:
		errs = append(errs, errors.New("github: set a token or an app, not both"))
	case app && c.AppID <= 0:
		errs = append(errs, errors.New("github: app private key set without an app id"))
	case app:
		if err := checkKey(c.PrivateKey); err != nil {
			errs = append(errs, fmt.Errorf("github app private key: %w", err))
		}
	}
	return errors.Join(errs...)
}

// checkKey checks that key is an RSA private key in PEM, without echoing it.
func checkKey(key []byte) error {
	block, _ := pem.Decode(key)
	if block == nil {
		return errors.New("not PEM")
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return errors.New("not an RSA private key (PKCS#1 or PKCS#8)")
	}
	if _, ok := k.(*rsa.PrivateKey); !ok {
		return errors.New("not an RSA private key")
	}
	return nil
}
