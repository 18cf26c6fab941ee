package github

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	gh "github.com/google/go-github/v62/github"
)

// GitHub App authentication (docs.github.com, "Authenticating as a GitHub
// App installation"): the app signs a short-lived RS256 JWT with its
// private key, exchanges it for an installation access token (valid one
// hour), and uses that token for the installation's repositories.
//
// Written here rather than taken from ghinstallation, which brought a second
// copy of go-github (v88) and its initialisation into every hookrun
// command.

// refreshMargin: a token or JWT this close to its expiry is renewed first.
const refreshMargin = time.Minute

// appJWT authenticates requests as the app itself.
type appJWT struct {
	base  http.RoundTripper
	appID int64
	key   *rsa.PrivateKey
	now   func() time.Time

	mu  sync.Mutex
	jwt string
	exp time.Time
}

func newAppJWT(base http.RoundTripper, appID int64, pemKey []byte) (*appJWT, error) {
	key, err := jwt.ParseRSAPrivateKeyFromPEM(pemKey)
	if err != nil {
		return nil, errors.New("invalid key") // never echo key material
	}
	return &appJWT{base: base, appID: appID, key: key, now: time.Now}, nil
}

// token returns a JWT valid for at least refreshMargin.
func (a *appJWT) token() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if a.jwt != "" && now.Add(refreshMargin).Before(a.exp) {
		return a.jwt, nil
	}
	// GitHub refuses an expiry more than 10 minutes after issue, and
	// backdating the issue time absorbs clock drift.
	iat, exp := now.Add(-30*time.Second), now.Add(9*time.Minute)
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(a.appID, 10),
		IssuedAt:  jwt.NewNumericDate(iat),
		ExpiresAt: jwt.NewNumericDate(exp),
	}).SignedString(a.key)
	if err != nil {
		return "", fmt.Errorf("signing github app jwt: %w", err)
	}
	a.jwt, a.exp = s, exp
	return s, nil
}

func (a *appJWT) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := a.token()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return a.base.RoundTrip(r)
}

// installationToken authenticates requests as one installation of the app,
// fetching its access token on first use and again shortly before expiry.
type installationToken struct {
	base http.RoundTripper
	app  *gh.Client // authenticated by appJWT
	id   int64
	now  func() time.Time

	mu  sync.Mutex
	tok string
	exp time.Time
}

func (t *installationToken) token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok != "" && t.now().Add(refreshMargin).Before(t.exp) {
		return t.tok, nil
	}
	it, _, err := t.app.Apps.CreateInstallationToken(ctx, t.id, nil)
	if err != nil {
		return "", fmt.Errorf("creating an access token for installation %d: %w", t.id, err)
	}
	if it.GetToken() == "" {
		return "", fmt.Errorf("creating an access token for installation %d: empty token", t.id)
	}
	t.tok, t.exp = it.GetToken(), it.GetExpiresAt().Time
	return t.tok, nil
}

func (t *installationToken) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.token(req.Context())
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "token "+tok)
	return t.base.RoundTrip(r)
}
