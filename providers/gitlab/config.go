package gitlab

import (
	"errors"

	"github.com/hookrun/hookrun/providers/forge"
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
	// Client is how requests are sent: rate-limit waits, transport,
	// logger.
	forge.Client
	// Webhook serves POST /hooks/gitlab; its WebhookSecrets are the
	// accepted X-Gitlab-Token values.
	forge.Webhook
}

func (c *Config) setDefaults() {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.Client.SetDefaults()
}

// Validate reports what is wrong with c (after defaults are set). Errors
// never include the token.
func (c *Config) Validate() error {
	var errs []error
	if _, err := GitOrigin(c.BaseURL); err != nil {
		errs = append(errs, err)
	}
	if c.Token == "" {
		errs = append(errs, errors.New("gitlab: set a token"))
	}
	return errors.Join(errs...)
}
