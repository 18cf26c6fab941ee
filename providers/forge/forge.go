package forge

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// ErrNoCredentials is wrapped by an API method of a forge that has no API
// credentials (no token, no App): the forge's webhooks may still be
// verified and normalized, but nothing can be asked of or posted to it.
var ErrNoCredentials = errors.New("no API credentials are configured")

// ErrNotConfigured is wrapped by every method of the forge Registry.Get
// answers for a name nothing registered. errors.Is(ErrNotConfigured,
// ErrNoCredentials) holds: a caller that copes with a forge without
// credentials copes with it too.
var ErrNotConfigured error = notConfiguredError{}

type notConfiguredError struct{}

func (notConfiguredError) Error() string        { return "no such section in the configuration" }
func (notConfiguredError) Is(target error) bool { return target == ErrNoCredentials }

// ErrAssociationInPayload is returned by Lookups.Association when the
// event's payload carries its author's association itself: there
// is nothing to look up, and the payload's answer must not be cached.
var ErrAssociationInPayload = errors.New("the payload carries the author association")

// ErrUnhandledEvent is wrapped by a normalizer when the forge sent an
// event type hookrun does not turn into runs; the webhook routes answer
// such events with 202 and no runs.
var ErrUnhandledEvent = errors.New("event is not handled")

// ErrMalformedPayload is wrapped by a normalizer when the body cannot be
// parsed, or lacks what the event type needs; the webhook routes answer it
// with 400.
var ErrMalformedPayload = errors.New("malformed payload")

// Forge is one forge as hookrun uses it. Implementations are safe for
// concurrent use.
type Forge interface {
	// Name is the forge's name: Event.Forge of its events, the
	// configuration section, the webhook route /hooks/<name>.
	Name() workflows.Forge
	// Links is how the forge lays out its web pages and names its pull
	// requests (links.go).
	Links() Links
	Webhooks
	Lookups
	Reporter
	Reviewer
	Git
}

// Lookups is what ingress asks a forge's API about an event before it
// trusts it. Callers bound ctx: a forge that is down must not hold a
// delivery up. Each answers an error wrapping ErrNoCredentials when the
// forge has no API credentials.
type Lookups interface {
	// Credentials is nil when the forge's API can be asked, else an error
	// wrapping ErrNoCredentials that says what to configure.
	Credentials() error
	// PullRequestHead is the current head of the pull or merge request e
	// is about (workflows.HeadLookup).
	PullRequestHead(ctx context.Context, e *workflows.Event) (workflows.Head, error)
	// ChangedFiles lists the files e's change touches
	// (workflows.ChangedFilesLookup).
	ChangedFiles(ctx context.Context, e *workflows.Event) (workflows.ChangedFiles, error)
	// Association is the role of e's author (OWNER, MEMBER, COLLABORATOR,
	// NONE) from the forge's API, for events whose payload carries none.
	// ErrAssociationInPayload: the payload's own answer stands. Another
	// error's text is what the skip reason says (it names what was looked
	// up and why it failed).
	Association(ctx context.Context, e *workflows.Event) (string, error)
}

// Reporter shows runs on the forge and opens draft pull/merge requests
// for a sandboxed agent's commits.
type Reporter interface {
	// Report posts or edits the run's comment and sets its commit status
	// (contract.Reporter); without credentials it does nothing and returns
	// r.Ref.
	Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error)
	// OpenDraft opens a draft request (contract.DraftOpener); without
	// credentials it fails with ErrNoCredentials.
	OpenDraft(ctx context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error)
}

// Git is where the forge's repositories are cloned from and with what.
type Git interface {
	// GitOrigin is the origin, scheme://host[:port], clone URLs of the
	// forge's events must have (providers/git.Origins).
	GitOrigin() (string, error)
	// GitCredentials is the user and password git fetches e's repository
	// with; "", "" without credentials (public repositories only).
	GitCredentials(ctx context.Context, e *workflows.Event) (user, pass string, err error)
}

// Registry holds the configured forges by name. Register them all before
// the first Get; Get is then safe for concurrent use.
type Registry struct {
	forges map[workflows.Forge]Forge
	order  []workflows.Forge // names in the order first registered
}

// NewRegistry returns a registry of fs (a nil entry is skipped).
func NewRegistry(fs ...Forge) *Registry {
	r := &Registry{forges: map[workflows.Forge]Forge{}}
	for _, f := range fs {
		r.Register(f)
	}
	return r
}

// Register adds f under f.Name(), replacing what was there; nil is
// skipped.
func (r *Registry) Register(f Forge) {
	if f == nil {
		return
	}
	if r.forges == nil {
		r.forges = map[workflows.Forge]Forge{}
	}
	if _, ok := r.forges[f.Name()]; !ok {
		r.order = append(r.order, f.Name())
	}
	r.forges[f.Name()] = f
}

// Get is the forge named name; never nil: a forge nothing registered
// answers every call with ErrNotConfigured.
func (r *Registry) Get(name workflows.Forge) Forge {
	if r != nil {
		if f, ok := r.forges[name]; ok {
			return f
		}
	}
	return notConfigured{name: name}
}

// Lookups is Get's Lookups, for consumers that only look things up.
func (r *Registry) Lookups(name workflows.Forge) Lookups { return r.Get(name) }

// Has reports whether a forge named name is registered.
func (r *Registry) Has(name workflows.Forge) bool {
	if r == nil {
		return false
	}
	_, ok := r.forges[name]
	return ok
}

// Names are the registered forges' names, in the order they were first
// registered (internal/app's: the order error messages list them in).
func (r *Registry) Names() []workflows.Forge {
	if r == nil {
		return nil
	}
	return slices.Clone(r.order)
}

// Origins are the git origins of the registered forges.
func (r *Registry) Origins() (map[workflows.Forge]string, error) {
	out := map[workflows.Forge]string{}
	for _, n := range r.Names() {
		o, err := r.Get(n).GitOrigin()
		if err != nil {
			return nil, err
		}
		out[n] = o
	}
	return out, nil
}

// notConfigured is the forge Get answers for a name nothing registered,
// as Atlantis's NotConfiguredVCSClient: every method fails and says which
// forge and what to set.
type notConfigured struct{ name workflows.Forge }

func (n notConfigured) err() error {
	if n.name == "" {
		return fmt.Errorf("the event names no forge: %w", ErrNotConfigured)
	}
	return fmt.Errorf("forge %q is not configured: %w", n.name, ErrNotConfigured)
}

func (n notConfigured) Name() workflows.Forge { return n.name }
func (n notConfigured) Credentials() error    { return n.err() }
func (n notConfigured) PullRequestHead(context.Context, *workflows.Event) (workflows.Head, error) {
	return workflows.Head{}, n.err()
}
func (n notConfigured) ChangedFiles(context.Context, *workflows.Event) (workflows.ChangedFiles, error) {
	return workflows.ChangedFiles{}, n.err()
}
func (n notConfigured) Association(context.Context, *workflows.Event) (string, error) {
	return "", n.err()
}

// Report of a forge that is not configured does nothing, as a configured
// forge without credentials: there is nothing to report to.
func (n notConfigured) Report(_ context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	return r.Ref, nil
}
func (n notConfigured) OpenDraft(context.Context, contract.DraftRequest) (workflows.ChangeRequest, error) {
	return workflows.ChangeRequest{}, fmt.Errorf("opening a draft pull request: %w", n.err())
}
func (n notConfigured) GitOrigin() (string, error) { return "", n.err() }

// GitCredentials of a forge that is not configured are none; its clone
// URLs are refused anyway (no origin).
func (n notConfigured) GitCredentials(context.Context, *workflows.Event) (string, string, error) {
	return "", "", nil
}

var (
	_ Forge                        = notConfigured{}
	_ contract.Reporter            = Reporter(nil)
	_ workflows.HeadLookup         = Lookups(nil)
	_ workflows.ChangedFilesLookup = Lookups(nil)
)
