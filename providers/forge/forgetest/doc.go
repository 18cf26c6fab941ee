// Package forgetest is the conformance suite every providers/forge.Forge
// runs against its own fake API (as runner/contract/contracttest is for
// executors): the lookups ingress makes, a run's report from start to
// final (one sticky comment, created then edited; the commit status), a
// draft, the git origin and credentials, the actions a run's steps ask
// for (on a target, on the event's own issue and pull request, with the
// close reason the forge's API takes), and what a forge without
// credentials answers (ErrNoCredentials, a report that does nothing).
package forgetest
