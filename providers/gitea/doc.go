// Package gitea reports runs on Gitea and Forgejo (Codeberg) and answers
// ingress what their payloads leave out. Their REST API under /api/v1/ is
// modeled on another forge's, whose client speaks it for everything hookrun
// calls, with the differences Dialect lists: the composition root builds
// that client (Config.API) and this package does not import it; the
// sticky comment, statuses and rate-limit handling are that client's. What
// is Gitea's own lives here: its Dialect, the author association from a
// user's permission on the repository (workflows.CollaboratorLookup), the
// API root and the git origin of a base URL.
//
// Webhooks (webhook.go; forge.Webhooks): POST /hooks/gitea,
// X-Gitea-Event and X-Gitea-Delivery, X-Gitea-Signature (the hex
// HMAC-SHA256 without a "sha256=" prefix) checked against every configured
// secret (Config.WebhookSecrets). Bodies have the shared shape and are
// decoded by the projections of providers/internal/hookbody with what
// Gitea adds. A label_updated delivery carries the labels after the
// change, not the one added or removed: Normalize leaves that unknown,
// and Forge.RecallLabels (labels.go), which ingress calls on a delivery's
// first receipt only, tells which from the labels seen last on that issue
// or pull request (LabelMemory, given by the composition root) and
// remembers the delivery's, or says when it cannot (also for a payload
// older than the one remembered, as Gitea's Redeliver sends).
package gitea
