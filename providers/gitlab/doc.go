// Package gitlab reports runs on GitLab: one sticky merge request or issue
// note per workflow, commit statuses, and rate-limit retries. It implements
// contract.Reporter; cmd builds it with New(Config) and hands it to the
// engine.
//
// The note is found again by the id the run record keeps
// (RunReport.Ref.CommentID), else by its hidden marker
// `<!-- hookrun:<workflow> -->` among the bot user's notes. Rate limits are
// waited out by providers/internal/ratelimit; the final report waits for as
// long as its context allows.
package gitlab
