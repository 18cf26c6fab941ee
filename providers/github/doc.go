// Package github reports runs on GitHub with go-github: one sticky comment
// per workflow and pull request, commit statuses, the eyes reaction, token or
// GitHub App authentication, and rate-limit retries. It implements
// contract.Reporter.
package github
