// Package gitea reports runs on Gitea and Forgejo (Codeberg) and answers
// ingress what their payloads leave out. Their REST API under /api/v1/ is
// GitHub's for everything hookrun calls (issue comments, commit statuses,
// comment reactions, pull requests and their files, the current user), so
// Reporter is a providers/github.Reporter pointed at it with Gitea's
// "Authorization: token" and the Gitea token only; the sticky comment,
// statuses and rate-limit handling are that package's. What is Gitea's
// own lives here: the author association from a user's permission on the
// repository (workflows.CollaboratorLookup), the API root and the git
// origin of a base URL.
//
// Webhooks (webhook.go, normalize.go; forge.Webhooks): POST /hooks/gitea,
// X-Gitea-Event and X-Gitea-Delivery, X-Gitea-Signature (the hex
// HMAC-SHA256 without GitHub's prefix) checked against every configured
// secret (Config.WebhookSecrets). Bodies are GitHub-shaped and decoded by
// the projections of providers/internal/ghpayload with what Gitea adds.
package gitea
