package github

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/dialect"
	"github.com/hookrun/hookrun/workflows"
)

// DefaultAPIURL is the REST API root of github.com.
const DefaultAPIURL = "https://api.github.com/"

// Config says how to reach GitHub and as whom. Set either Token, or AppID
// and PrivateKey.
type Config struct {
	// Forge is the forge whose events this client reports on: github
	// (default), or a forge whose API answers GitHub's REST calls for what
	// hookrun uses, with the differences its Dialect lists.
	Forge workflows.Forge
	// Dialect, for another Forge, is how its API differs (from its own
	// package; the composition root passes it); nil for GitHub.
	Dialect *dialect.Dialect
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
	// Client is how requests are sent: rate-limit waits, transport,
	// logger.
	forge.Client
	// Webhook serves POST /hooks/github; X-Hub-Signature-256 is checked
	// against its WebhookSecrets.
	forge.Webhook
}

func (c *Config) setDefaults() {
	if c.Forge == "" {
		c.Forge = Name
	}
	if c.APIURL == "" {
		c.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	c.Client.SetDefaults()
}

// Validate reports what is wrong with c (after defaults are set). Errors
// never include the token or key.
func (c *Config) Validate() error {
	var errs []error
	if _, err := GitOrigin(c.APIURL); err != nil {
		errs = append(errs, err)
	}
	app := c.AppID != 0 || len(c.PrivateKey) > 0
	switch {
	case c.Forge != Name && c.Dialect == nil:
		errs = append(errs, fmt.Errorf("github client: forge %q is not github and has no dialect", c.Forge))
	case c.Dialect != nil && c.Dialect.TokenOnly && (c.Token == "" || app):
		errs = append(errs, fmt.Errorf("%s: set a token (it has no apps)", c.Forge))
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
