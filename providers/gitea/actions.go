package gitea

import "github.com/hookrun/hookrun/providers/forge"

// The Forge's forge.Actor is the API's, which speaks Gitea's API as
// Dialect says (labels by id, assignees through PATCH of the issue, no
// close reason); without a token each method answers
// forge.ErrNoCredentials (forge.Guard, set in NewForge).

var _ forge.Actor = (*Forge)(nil)
