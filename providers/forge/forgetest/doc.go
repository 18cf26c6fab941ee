// Package forgetest is the conformance suite every providers/forge.Forge
// runs against its own fake API (as runner/contract/contracttest is for
// executors): the lookups ingress makes, a run's report from start to
// final (one sticky comment, created then edited; the commit status), a
// draft, the git origin and credentials, and what a forge without
// credentials answers (ErrNoCredentials, a report that does nothing).
package forgetest
