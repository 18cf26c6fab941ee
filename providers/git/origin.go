package git

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Origins maps each forge to the origin, scheme://host[:port], that the
// clone URLs of its events must have: "https://forge.example", a
// self-hosted server's "https://git.example:8443" (forge.Git's
// GitOrigin). The forge's credentials go only there.
type Origins map[workflows.Forge]string

// Validate reports an origin that is not an http(s) scheme://host[:port].
func (o Origins) Validate() error {
	var errs []error
	for forge, want := range o {
		if _, err := parseOrigin(want); err != nil {
			errs = append(errs, fmt.Errorf("checking the %s origin %q: %w", forge, want, err))
		}
	}
	return errors.Join(errs...)
}

// Check refuses e's clone URL unless it is an http(s) URL without
// credentials on the origin of e's forge (same scheme, host and port; a
// default port may be written or not). Local paths, file://, ssh://,
// git://, scp-style addresses and ext:: are refused. The error names the
// host found and the origin expected, never the URL (it may carry
// credentials), and matches contract.ErrRefused.
func (o Origins) Check(e *workflows.Event) error {
	return contract.Refuse(o.check(e))
}

func (o Origins) check(e *workflows.Event) error {
	want, ok := o[e.Forge]
	if !ok {
		return fmt.Errorf("checking clone URL: no origin is configured for forge %q", e.Forge)
	}
	wantOrigin, err := parseOrigin(want)
	if err != nil {
		return fmt.Errorf("checking clone URL: the %s origin %q: %w", e.Forge, want, err)
	}
	raw := e.CloneURL
	if raw == "" {
		return errors.New("checking clone URL: event has no clone URL")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Opaque != "" || u.Host == "" {
		return fmt.Errorf("checking clone URL: not an http(s) URL (a local path, scp-style or malformed address); %s clones come only from %s", e.Forge, want)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return fmt.Errorf("checking clone URL: scheme %q is not allowed; %s clones come only from %s", scheme, e.Forge, want)
	}
	if u.User != nil {
		return fmt.Errorf("checking clone URL: it carries credentials; %s clones come only from %s", e.Forge, want)
	}
	// What git will connect to is what Go parsed only if the URL starts
	// with exactly scheme://host: no parser differential past this point.
	prefix := scheme + "://" + strings.ToLower(u.Host)
	if rest, ok := strings.CutPrefix(strings.ToLower(raw), prefix); !ok || (rest != "" && rest[0] != '/') {
		return fmt.Errorf("checking clone URL: host %q is not written plainly; %s clones come only from %s", u.Host, e.Forge, want)
	}
	if hostPort(scheme, u.Host) != wantOrigin.host {
		return fmt.Errorf("checking clone URL: host %q is not the %s host (want %s)", u.Host, e.Forge, want)
	}
	if scheme != wantOrigin.scheme {
		return fmt.Errorf("checking clone URL: scheme %q is not the %s one (want %s)", scheme, e.Forge, want)
	}
	return nil
}

// origin is a normalized scheme://host[:port]: lower case, without the
// scheme's default port.
type origin struct{ scheme, host string }

// parseOrigin normalizes scheme://host[:port] (a trailing slash allowed).
func parseOrigin(s string) (origin, error) {
	u, err := url.Parse(s)
	if err != nil {
		return origin{}, errors.New("not a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "https" && scheme != "http") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return origin{}, errors.New("want http(s)://host[:port]")
	}
	return origin{scheme, hostPort(scheme, u.Host)}, nil
}

// hostPort lowercases host[:port] and drops the scheme's default port.
func hostPort(scheme, host string) string {
	host = strings.ToLower(host)
	switch {
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		return strings.TrimSuffix(host, ":443")
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		return strings.TrimSuffix(host, ":80")
	}
	return host
}
