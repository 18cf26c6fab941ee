// Package gitlab reports runs on GitLab: one sticky merge request or issue
// note per workflow, commit statuses, and rate-limit retries. It implements
// contract.Reporter.
package gitlab
