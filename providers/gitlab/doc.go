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
// long as its context allows.
package gitlab
