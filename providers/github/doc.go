// Package github reports runs on GitHub with go-github: one sticky comment
// per workflow and pull request (or issue), commit statuses, the eyes
// reaction, token or GitHub App authentication, and rate-limit retries. It
// implements contract.Reporter; cmd builds it with New(Config) and hands it
// to the engine. The same Reporter implements workflows.HeadLookup for
// ingress: the current head of a pull request, read with the same token or
// installation clients.
//
// With report.review, the final report first posts the run's findings as
// one pull request review (review.go, forge.Reviewer; on a forge modeled on
// GitHub's API, whose Reporter this is too, as its Dialect says), and with
// an App the run is the check run hookrun/<workflow> instead of a commit
// status (checks.go; its external_id is the run's id, which a rerequest
// names).
//
// The comment is found again by the id the run record keeps
// (RunReport.Ref.CommentID), else by its hidden marker
// `<!-- hookrun:<workflow> -->` among the bot's own comments. Rate limits are
// waited out by providers/internal/ratelimit; the final report waits for as
// long as its context allows.
//
// Webhooks (webhook.go; forge.Webhooks): POST /hooks/github,
// X-GitHub-Event and X-GitHub-Delivery, X-Hub-Signature-256 checked against
// every configured secret (Config.WebhookSecrets; forge.VerifyHMAC), the
// ping answered. What authorizes an event:
//   - pull_request: the pull request author's author_association (the
//     code a run checks out is theirs), not the sender's, which GitHub does
//     not send. Fork: head.repo differs from base.repo, or was deleted.
//   - issue_comment: the comment's author_association. The payload does not
//     say where a pull request's head lives: Fork = true, no head SHA;
//     ingress pins the runs to a known head.
//   - issues: the issue author's author_association.
//   - push: COLLABORATOR, since pushing needs write access.
//   - check_run and check_suite rerequested (the Re-run buttons; rerequest.go):
//     workflows.KindRerequest, whose payload names no role: the sender's
//     permission on the repository is looked up (Forge.Association, as the
//     App's installation; collaborators.go).
//
// Parsing: bodies are decoded into projections of go-github's event
// types, only the fields normalization reads, by the encoding/json v2
// engine (providers/internal/hookbody, shared with forges that send the
// same shape;
// FuzzGitHubProjection holds them equal to go-github's ParseWebHook, which
// decoding the whole payload made 80 % of the handler's CPU).
package github
