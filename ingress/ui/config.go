package ui

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultSessionTTL = 12 * time.Hour
	DefaultPageSize   = 50
	DefaultGitHubURL  = "https://github.com"
	DefaultGitLabURL  = "https://gitlab.com"
)

// Config is the UI's configuration.
type Config struct {
	// Token is the API token (api.token) the login form asks for; the
	// session key is derived from it. Empty: the UI is not registered.
	Token string
	// SessionTTL is how long a login lasts. Default DefaultSessionTTL.
	SessionTTL time.Duration
	// PageSize is how many runs the list shows per page. Default
	// DefaultPageSize.
	PageSize int
	// GitHubURL and GitLabURL are the forges' web origins, for links to a
	// run whose event names no repository URL of its own (runs started
	// through the API). Default github.com and gitlab.com; internal/app
	// derives them from github.api_url and gitlab.base_url.
	GitHubURL string
	GitLabURL string
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() {
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.GitHubURL == "" {
		c.GitHubURL = DefaultGitHubURL
	}
	if c.GitLabURL == "" {
		c.GitLabURL = DefaultGitLabURL
	}
	c.GitHubURL = strings.TrimRight(c.GitHubURL, "/")
	c.GitLabURL = strings.TrimRight(c.GitLabURL, "/")
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports what is wrong with c (after setDefaults).
func (c *Config) Validate() error {
	var errs []error
	if c.Token == "" {
		errs = append(errs, errors.New("token is empty"))
	}
	if c.SessionTTL < time.Minute {
		errs = append(errs, fmt.Errorf("session TTL %v is shorter than a minute", c.SessionTTL))
	}
	if c.PageSize < 1 || c.PageSize > 1000 {
		errs = append(errs, fmt.Errorf("page size %d is not between 1 and 1000", c.PageSize))
	}
	for name, u := range map[string]string{"GitHub": c.GitHubURL, "GitLab": c.GitLabURL} {
		if !webURL(u) {
			errs = append(errs, fmt.Errorf("%s URL %q is not an http(s) URL", name, u))
		}
	}
	return errors.Join(errs...)
}

// webURL reports whether s is an absolute http(s) URL with a host: the
// only links the pages show.
func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
