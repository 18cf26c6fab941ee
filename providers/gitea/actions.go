package gitea

import "github.com/hookrun/hookrun/providers/forge"

// The Forge's forge.Actor is the github package's, which speaks Gitea's
// API where it differs from GitHub's (labels by id, assignees and state
// through PATCH of the issue); without a token each method answers
// forge.ErrNoCredentials (forge.GuardActor, set in NewForge).

var _ forge.Actor = (*Forge)(nil)
