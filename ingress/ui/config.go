package ui

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of Config.
const (
	DefaultSessionTTL = 12 * time.Hour
	DefaultPageSize   = 50
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
	return errors.Join(errs...)
}
