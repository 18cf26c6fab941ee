package decide

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// Defaults of Config.
const (
	// DefaultRetryCommand is CommandsConfig.Retry's default.
	DefaultRetryCommand = "retry"
	// DefaultMaxCommandsPerComment is CommandsConfig.MaxPerComment's default.
	DefaultMaxCommandsPerComment = 10
	// DefaultLookupTimeout is TrustConfig.LookupTimeout's default.
	DefaultLookupTimeout = 2 * time.Second
	// DefaultAssociationTTL is TrustConfig.AssociationTTL's default.
	DefaultAssociationTTL = 5 * time.Minute
	// MaxAssociationTTL bounds TrustConfig.AssociationTTL: a member removed
	// from a project is trusted at most this long.
	MaxAssociationTTL = 5 * time.Minute
	// DefaultFilesTimeout is FilesConfig.Timeout's default.
	DefaultFilesTimeout = 5 * time.Second
	// DefaultHeadWriteTimeout is Config.HeadWriteTimeout's default.
	DefaultHeadWriteTimeout = 5 * time.Second
)

// Config is what a Decider decides by.
type Config struct {
	// AllowRepos are the repositories events are acted on for, globs over
	// Event.Repo (workflows.MatchRepo). Empty: every repository.
	AllowRepos []string
	// Commands are the names of the comment commands hookrun itself acts on.
	Commands CommandsConfig
	// Trust bounds the lookups that pin a comment's runs to a head and
	// learn an author's role (trust.go).
	Trust TrustConfig
	// Files bounds the lookup of a change's files (match.go).
	Files FilesConfig
	// ChatOrigins is, for each forge a chat trigger may name, the
	// scheme://host its repositories are cloned from: a chat run's
	// CloneURL is the origin, its trigger's repo and ".git". A forge
	// without an entry: its own GitOrigin (Deps.Forges); a forge without
	// either runs no chat command.
	ChatOrigins map[workflows.Forge]string
	// HeadWriteTimeout bounds remembering the head of a pull_request event
	// (RememberHead). Default DefaultHeadWriteTimeout.
	HeadWriteTimeout time.Duration
}

// CommandsConfig names the comment commands hookrun itself acts on.
type CommandsConfig struct {
	// Retry is the name of the command that re-runs a pull request's
	// failed runs (a new comment whose first line is /NAME, by a user
	// each run's workflow `authorize` policy admits). Default "retry";
	// "-" turns the command off.
	Retry string
	// MaxPerComment is how many distinct command lines of one comment
	// start runs, across the workflows that take them; the lines past it
	// are listed as skipped. Default DefaultMaxCommandsPerComment (10).
	MaxPerComment int
}

// TrustConfig bounds what is learned beyond a payload before an event is
// trusted (trust.go).
type TrustConfig struct {
	// LookupTimeout bounds each forge API lookup (and each head store
	// read), so that a forge that is down delays a delivery by at most
	// this much. Default 2s.
	LookupTimeout time.Duration
	// AssociationTTL is how long a looked-up association is reused for the
	// same project and user. Default and maximum 5m.
	AssociationTTL time.Duration
}

// FilesConfig bounds how the files a pull request or push changes are
// learned, for workflows whose triggers have paths or paths_ignore.
type FilesConfig struct {
	// Timeout bounds the whole lookup of one event (every page), so that
	// the answer reaches the forge in time (forges give up after 10 s or
	// so). Default 5s.
	Timeout time.Duration
}

func (c *Config) setDefaults() {
	c.Commands.setDefaults()
	c.Trust.setDefaults()
	c.Files.setDefaults()
	if c.HeadWriteTimeout == 0 {
		c.HeadWriteTimeout = DefaultHeadWriteTimeout
	}
}

// WithDefaults is c with its defaults filled in.
func (c Config) WithDefaults() Config { c.setDefaults(); return c }

// Validate reports every problem of c, defaults applied.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	for i, p := range c.AllowRepos {
		if err := workflows.CheckRepoPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("checking allowed repositories: entry %d: %w", i, err))
		}
	}
	if c.HeadWriteTimeout < 0 {
		errs = append(errs, errors.New("checking head write timeout: must not be negative"))
	}
	errs = append(errs, c.Commands.Validate(), c.Trust.Validate(), c.Files.Validate())
	return errors.Join(errs...)
}

func (c *CommandsConfig) setDefaults() {
	if c.Retry == "" {
		c.Retry = DefaultRetryCommand
	}
	if c.MaxPerComment == 0 {
		c.MaxPerComment = DefaultMaxCommandsPerComment
	}
}

var retryName = regexp.MustCompile(`^[A-Za-z0-9][-_A-Za-z0-9]*$`)

// Validate reports every problem of a defaulted c.
func (c CommandsConfig) Validate() error {
	var errs []error
	if r := c.Retry; r != "-" && !retryName.MatchString(r) {
		errs = append(errs, fmt.Errorf("checking commands: retry %q must be a name of letters, digits, - and _ (without the slash), or - to turn it off", r))
	}
	if c.MaxPerComment < 0 {
		errs = append(errs, fmt.Errorf("checking commands: max per comment must not be negative, got %d", c.MaxPerComment))
	}
	return errors.Join(errs...)
}

// RetryCommand is the comment line that asks for a re-run, "" when off.
func (c CommandsConfig) RetryCommand() string {
	if c.Retry == "-" {
		return ""
	}
	return "/" + c.Retry
}

func (c *TrustConfig) setDefaults() {
	if c.LookupTimeout == 0 {
		c.LookupTimeout = DefaultLookupTimeout
	}
	if c.AssociationTTL == 0 {
		c.AssociationTTL = DefaultAssociationTTL
	}
}

// Validate reports every problem of a defaulted c.
func (c *TrustConfig) Validate() error {
	var errs []error
	if c.LookupTimeout < 0 {
		errs = append(errs, errors.New("checking lookup timeout: must not be negative"))
	}
	if c.AssociationTTL < 0 || c.AssociationTTL > MaxAssociationTTL {
		errs = append(errs, fmt.Errorf("checking association ttl: must be between 0 and %s, got %s", MaxAssociationTTL, c.AssociationTTL))
	}
	return errors.Join(errs...)
}

func (c *FilesConfig) setDefaults() {
	if c.Timeout == 0 {
		c.Timeout = DefaultFilesTimeout
	}
}

// Validate reports a negative timeout.
func (c FilesConfig) Validate() error {
	if c.Timeout < 0 {
		return fmt.Errorf("checking the changed files lookup timeout: %v is negative", c.Timeout)
	}
	return nil
}
