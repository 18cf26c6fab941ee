package forge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hookrun/hookrun/workflows"
)

// Base is what every forge's Forge holds alike: its name, the API methods
// guarded by its credentials (Guarded), its webhook configuration (Hook)
// and the git origin of its configured URL (GitOrigin). A forge embeds it
// and Build fills it.
type Base struct {
	Guarded
	Hook
	name     workflows.Forge
	origin   string
	gitUser  string
	gitToken string
}

// Parts say how Build makes a forge of configuration C whose API client
// is R.
type Parts[C Configured, R API] struct {
	// Name is the forge's (Name, New's error); Request what it calls a pull
	// request (Links.RequestName), for OpenDraft's.
	Name    workflows.Forge
	Request string
	// Origin is the git origin of the configuration's URL; Hook the
	// forge's webhook, configured by C's Webhook.
	Origin func(C) (string, error)
	Hook   HookSpec
	// Token is the configuration's API token: with it New makes the
	// client, and git fetches with it as GitUser's password
	// (GitCredentials); "" = neither. Credentialed, when set, decides
	// instead whether there are API credentials (an App has no token);
	// one of the two is required.
	Token        func(C) string
	Credentialed func(C) bool
	New          func(C) (R, error)
	GitUser      string
}

// Configured is a forge's configuration: it embeds Webhook.
type Configured interface {
	WebhookConfig() Webhook
}

// Build fills b and the API client api from cfg: the origin's and the
// hook's errors as they are, New's as "configuring <name>: %w". Without
// credentials *api stays R's zero value and the guarded methods answer
// check's error (the forge's Credentials).
func Build[C Configured, R API](b *Base, api *R, cfg C, p Parts[C, R], check func() error) error {
	origin, err := p.Origin(cfg)
	if err != nil {
		return err
	}
	hook, err := NewHook(p.Hook, cfg.WebhookConfig())
	if err != nil {
		return err
	}
	*b = Base{Hook: hook, name: p.Name, origin: origin, gitUser: p.GitUser}
	credentialed := p.Credentialed
	if p.Token != nil {
		b.gitToken = p.Token(cfg)
		if credentialed == nil {
			credentialed = func(C) bool { return b.gitToken != "" }
		}
	}
	b.Guarded = Guard(check, func() API { return *api }, p.Request)
	if !credentialed(cfg) {
		return nil
	}
	if *api, err = p.New(cfg); err != nil {
		return fmt.Errorf("configuring %s: %w", p.Name, err)
	}
	return nil
}

// Name is the forge's (Parts.Name).
func (b *Base) Name() workflows.Forge { return b.name }

// GitOrigin is the origin of the configured URL.
func (b *Base) GitOrigin() (string, error) { return b.origin, nil }

// Origin is GitOrigin's answer.
func (b *Base) Origin() string { return b.origin }

// LookUpAssociation is Forge.Association of a forge whose payloads carry
// no association, written once: without credentials (credentials is the
// forge's Credentials' answer) an error wrapping
// ErrNoCredentials (noCredentials says what could not be looked up); when
// the payload lacks what the lookup needs, missing ("" when it has it);
// else lookup's answer, its error as "looking up <failed> failed: %w".
// The errors are the skip reasons.
func LookUpAssociation(credentials error, noCredentials, missing, failed string, lookup func() (string, error)) (string, error) {
	switch {
	case credentials != nil:
		return "", fmt.Errorf("%s: %w", noCredentials, ErrNoCredentials)
	case missing != "":
		return "", errors.New(missing)
	}
	a, err := lookup()
	if err != nil {
		return "", fmt.Errorf("looking up %s failed: %w", failed, err)
	}
	return a, nil
}

// GitCredentials are Parts.GitUser and the configuration's token
// (Parts.Token); none without a token.
func (b *Base) GitCredentials(context.Context, *workflows.Event) (string, string, error) {
	if b.gitToken == "" {
		return "", "", nil
	}
	return b.gitUser, b.gitToken, nil
}

// HTTPURL parses raw, or def when raw is "", as an http(s) URL with a
// host; the error names the setting and shows def:
// "<setting> %q: want an http(s) URL such as <def>".
func HTTPURL(setting, raw, def string) (*url.URL, error) {
	raw = cmp.Or(raw, def)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s %q: want an http(s) URL such as %s", setting, raw, def)
	}
	return u, nil
}

// OriginOf is u's origin, scheme://host[:port], lower-cased.
func OriginOf(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
}
