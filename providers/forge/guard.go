package forge

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// API is what a forge's API client does for its Forge: the lookups that
// need it, reporting, drafts, reviews and actions.
type API interface {
	workflows.HeadLookup
	workflows.ChangedFilesLookup
	contract.Reporter
	OpenDraft(ctx context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error)
	Reviewer
	Actor
}

// Guarded is the API methods of a forge whose client may be missing (no
// credentials): each asks check first (the forge's Credentials) and
// answers its error, ErrNoCredentials, without calling get; otherwise it
// calls the API get returns. Report without credentials does nothing and
// returns the report's Ref. A forge embeds it: the forges' guard, written
// once.
type Guarded struct {
	check   func() error
	get     func() API
	request string
}

// Guard is the Guarded API of check and get; request is what the forge
// calls a pull request (Links.RequestName), for OpenDraft's error.
func Guard(check func() error, get func() API, request string) Guarded {
	return Guarded{check: check, get: get, request: request}
}

// call is method m of the API after check: check's error without calling
// the API; the forge methods' guard, written once.
func call[T any](g Guarded, m func(API) (T, error)) (T, error) {
	if err := g.check(); err != nil {
		var zero T
		return zero, err
	}
	return m(g.get())
}

// do is call for a method that returns only an error.
func do(g Guarded, m func(API) error) error {
	_, err := call(g, func(a API) (struct{}, error) { return struct{}{}, m(a) })
	return err
}

// PullRequestHead asks the API (workflows.HeadLookup).
func (g Guarded) PullRequestHead(ctx context.Context, e *workflows.Event) (workflows.Head, error) {
	return call(g, func(a API) (workflows.Head, error) { return a.PullRequestHead(ctx, e) })
}

// ChangedFiles asks the API (workflows.ChangedFilesLookup).
func (g Guarded) ChangedFiles(ctx context.Context, e *workflows.Event) (workflows.ChangedFiles, error) {
	return call(g, func(a API) (workflows.ChangedFiles, error) { return a.ChangedFiles(ctx, e) })
}

// Report reports r; without credentials it does nothing.
func (g Guarded) Report(ctx context.Context, r *contract.RunReport) (contract.ReportRef, error) {
	if g.check() != nil {
		return r.Ref, nil
	}
	return g.get().Report(ctx, r)
}

// OpenDraft opens a draft pull (merge) request.
func (g Guarded) OpenDraft(ctx context.Context, req contract.DraftRequest) (workflows.ChangeRequest, error) {
	if err := g.check(); err != nil {
		return workflows.ChangeRequest{}, fmt.Errorf("opening a draft %s: %w", g.request, err)
	}
	return g.get().OpenDraft(ctx, req)
}

// Review posts r's findings (Reviewer).
func (g Guarded) Review(ctx context.Context, r *contract.RunReport) (*ReviewSummary, error) {
	if err := g.check(); err != nil {
		return nil, fmt.Errorf("reviewing: %w", err)
	}
	return g.get().Review(ctx, r)
}

func (g Guarded) ListRepoLabels(ctx context.Context, i Issue) ([]string, error) {
	return call(g, func(a API) ([]string, error) { return a.ListRepoLabels(ctx, i) })
}

func (g Guarded) CreateLabel(ctx context.Context, i Issue, name string) error {
	return do(g, func(a API) error { return a.CreateLabel(ctx, i, name) })
}

func (g Guarded) AddLabels(ctx context.Context, i Issue, names []string) error {
	return do(g, func(a API) error { return a.AddLabels(ctx, i, names) })
}

func (g Guarded) RemoveLabels(ctx context.Context, i Issue, names []string) error {
	return do(g, func(a API) error { return a.RemoveLabels(ctx, i, names) })
}

func (g Guarded) AddAssignees(ctx context.Context, i Issue, logins []string) error {
	return do(g, func(a API) error { return a.AddAssignees(ctx, i, logins) })
}

func (g Guarded) RemoveAssignees(ctx context.Context, i Issue, logins []string) error {
	return do(g, func(a API) error { return a.RemoveAssignees(ctx, i, logins) })
}

func (g Guarded) SetState(ctx context.Context, i Issue, state, reason string) error {
	return do(g, func(a API) error { return a.SetState(ctx, i, state, reason) })
}

func (g Guarded) Comment(ctx context.Context, i Issue, marker, body string) (bool, error) {
	return call(g, func(a API) (bool, error) { return a.Comment(ctx, i, marker, body) })
}

var _ API = Guarded{}
