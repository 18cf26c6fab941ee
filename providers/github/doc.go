// Package github reports runs on GitHub with go-github: one sticky comment
// per workflow and pull request (or issue), commit statuses, the eyes
// reaction, token or GitHub App authentication, and rate-limit retries. It
// implements contract.Reporter; cmd builds it with New(Config) and hands it
// to the engine. The same Reporter implements workflows.HeadLookup for
// ingress: the current head of a pull request, read with the same token or
// installation clients.
//
// With report.review, the final report first posts the run's findings as
// one pull request review (review.go, forge.Reviewer; on Gitea, whose
// Reporter this is too, as a Gitea pull review), and with an App the run is
// the check run hookrun/<workflow> instead of a commit status (checks.go).
//
// The comment is found again by the id the run record keeps
// (RunReport.Ref.CommentID), else by its hidden marker
// `<!-- hookrun:<workflow> -->` among the bot's own comments. Rate limits are
// waited out by providers/internal/ratelimit; the final report waits for as
// long as its context allows.
package github
