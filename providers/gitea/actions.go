package gitea

import (
	"context"

	"github.com/hookrun/hookrun/providers/forge"
)

// The Forge's forge.Actor is the github package's, which speaks Gitea's
// API where it differs from GitHub's (labels by id, assignees and state
// through PATCH of the issue); without a token each method answers
// forge.ErrNoCredentials.

// ListRepoLabels implements forge.Actor.
func (f *Forge) ListRepoLabels(ctx context.Context, i forge.Issue) ([]string, error) {
	if err := f.Credentials(); err != nil {
		return nil, err
	}
	return f.rep.ListRepoLabels(ctx, i)
}

// CreateLabel implements forge.Actor.
func (f *Forge) CreateLabel(ctx context.Context, i forge.Issue, name string) error {
	if err := f.Credentials(); err != nil {
		return err
	}
	return f.rep.CreateLabel(ctx, i, name)
}

// AddLabels implements forge.Actor.
func (f *Forge) AddLabels(ctx context.Context, i forge.Issue, names []string) error {
	if err := f.Credentials(); err != nil {
		return err
	}
	return f.rep.AddLabels(ctx, i, names)
}

// RemoveLabels implements forge.Actor.
func (f *Forge) RemoveLabels(ctx context.Context, i forge.Issue, names []string) error {
	if err := f.Credentials(); err != nil {
		return err
	}
	return f.rep.RemoveLabels(ctx, i, names)
}

// AddAssignees implements forge.Actor.
func (f *Forge) AddAssignees(ctx context.Context, i forge.Issue, logins []string) error {
	if err := f.Credentials(); err != nil {
		return err
	}
	return f.rep.AddAssignees(ctx, i, logins)
}

// RemoveAssignees implements forge.Actor.
func (f *Forge) RemoveAssignees(ctx context.Context, i forge.Issue, logins []string) error {
	if err := f.Credentials(); err != nil {
		return err
	}
	return f.rep.RemoveAssignees(ctx, i, logins)
}

// SetState implements forge.Actor.
func (f *Forge) SetState(ctx context.Context, i forge.Issue, state, reason string) error {
	if err := f.Credentials(); err != nil {
		return err
	}
	return f.rep.SetState(ctx, i, state, reason)
}

// Comment implements forge.Actor.
func (f *Forge) Comment(ctx context.Context, i forge.Issue, marker, body string) (bool, error) {
	if err := f.Credentials(); err != nil {
		return false, err
	}
	return f.rep.Comment(ctx, i, marker, body)
}

var _ forge.Actor = (*Forge)(nil)
