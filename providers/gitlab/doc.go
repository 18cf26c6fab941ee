// Package gitlab reports runs on GitLab: one sticky merge request or issue
// note per workflow, commit statuses, and rate-limit retries. It implements
// contract.Reporter; cmd builds it with New(Config) and hands it to the
// engine. The same Reporter answers ingress's questions to the API:
// workflows.AssociationLookup (a user's access level in a project as an
// author association) and workflows.HeadLookup (a merge request's head).
//
// With report.review, the final report first posts the run's findings as
// merge request discussions positioned on the new lines, and resolves those
// of findings no longer found (review.go, forge.Reviewer).
//
// The note is found again by the id the run record keeps
// (RunReport.Ref.CommentID), else by its hidden marker
// `<!-- hookrun:<workflow> -->` among the bot user's notes. Rate limits are
// waited out by providers/internal/ratelimit; the final report waits for as
// long as its context allows. Every note, discussion and description body
// goes through inert (inert.go): no line of a run's text becomes a quick
// action run with the bot's permissions.
//
// Webhooks (webhook.go; forge.Webhooks): POST /hooks/gitlab,
// X-Gitlab-Event, X-Gitlab-Token compared in constant time with every
// configured token's digest (Config.WebhookSecrets; forge.VerifyToken).
// The dedupe key is Idempotency-Key, else X-Gitlab-Event-UUID, else
// "sha256-" and the body's digest. Bodies go through client-go's
// ParseWebhook. GitLab sends nothing like author_association: merge
// request, note and issue events are NONE with the ids the association is
// looked up with (the author's access level in the project: Owner → OWNER,
// Maintainer and Developer → MEMBER, Reporter → COLLABORATOR, anything else
// → NONE); the author is the merge request's (its code is what runs), the
// note's or the issue's. Pushes are COLLABORATOR. Fork:
// source_project_id != target_project_id. Actions are mapped to hookrun's
// (workflows.Actions): open → opened, reopen → reopened, close → closed, merge → closed
// with Merged, update → synchronize when commits changed (oldrev set) else
// edited; approved/unapproved and others pass through. Confidential issue
// and note hooks are not handled.
package gitlab
