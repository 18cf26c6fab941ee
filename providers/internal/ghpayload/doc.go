// Package ghpayload holds the projections of GitHub-shaped webhook bodies
// (GitHub's, and Gitea's and Forgejo's, which send the same shape) and the
// mapping both normalizers share: the common fields, a pull request, an
// issue, labels, a push. providers/github and providers/gitea import it;
// nothing outside providers can.
package ghpayload
