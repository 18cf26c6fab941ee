// Package forge is what hookrun does with a forge (each of those hookrun
// knows, and any added later), as one interface: Forge bundles receiving
// its webhooks (Webhooks: the route's switch, the event and delivery
// headers, verification with rotated secrets through the shared
// VerifyHMAC and VerifyToken, the ping, normalization into an Event, a
// push's files), the author association and other lookups ingress makes
// before it trusts an event (Lookups), reporting a run and opening draft pull requests
// (Reporter), and where git clones from and with which credentials (Git).
// Each forge's package (providers/<forge>) implements it, guarded by
// `var _ forge.Forge`, and runs
// the conformance suite in forgetest against its own fake API.
//
// Callers hold a Registry keyed by forge name and never check for nil:
// Get answers a forge that is not configured with one whose every method
// says so (ErrNotConfigured, wrapping ErrNoCredentials), as Atlantis's
// not-configured VCS client does. "Configured" has two levels: a forge
// whose section exists is registered (its git origin is known, its
// deliveries are verified and normalized), and its API methods answer
// ErrNoCredentials until it has a token; Report without credentials is a
// no-op (nothing to report to), as it has always been.
//
// Reviewer (review.go) posts a run's findings on the lines its pull or
// merge request changed, one review per run, without repeating an earlier
// run's; each forge's Report calls it in the final phase of a workflow
// with report.review, before the run's comment, which shows its Summary.
// forgetest's Review case runs it against each forge's fake review API.
//
// Actor (actions.go), which each forge's Forge also implements, changes
// issues and pull requests with hookrun's own credentials: labels,
// assignees, state, a comment. ApplyActions decides what of a run's
// actions.json the workflow's permissions allow (contract.PlanActions),
// refuses labels missing on the repository unless create_labels, marks
// its comment so that it is posted once, and says what became of each
// thing asked (contract.ActionsOutcome); Report applies a final report's
// actions and then reports it, listing them (a forge without credentials
// refuses them all, saying why).
//
// What the forges share is written once here: Guard (guard.go) is the API
// methods of a forge whose client may be missing, behind its credentials
// check; Hook (webhook.go) the route switch, event header and secret or
// token check of its webhooks; Client (client.go) its API client's
// rate-limit waits, transport and logger; OpenDraft (drafts.go) the
// outline of opening a draft. Links (links.go) is how a forge lays out
// its web pages and names its pull requests, for the pages, the comment
// and the checkout, so that nothing outside a forge's package names it.
//
// Adding a forge is a new package that implements Forge and Actor and
// runs forgetest, and one Register line in internal/app.
package forge
