package app

import "github.com/hookrun/hookrun/ingress"

// Trust gives ingress the forge API clients it asks what a payload does not
// say: GitHub's current head of a pull request, for a comment whose pull
// request sent no pull_request event yet; GitLab's merge request head and
// its members' roles; Gitea's pull request heads and its users'
// permissions. They are the reporters (the same credentials); a
// forge without API credentials has none: comments there whose head was not
// remembered are refused, and GitLab and Gitea events stay NONE. hookrun_heads comes
// with the queue (ingress takes it from the publisher).
func (f *Forges) Trust() ingress.TrustConfig {
	var t ingress.TrustConfig
	if f.GitHub != nil {
		t.GitHubHeads = f.GitHub
	}
	if f.GitLab != nil {
		t.GitLabHeads, t.GitLabMembers = f.GitLab, f.GitLab
	}
	if f.Gitea != nil {
		t.GiteaHeads, t.GiteaCollaborators = f.Gitea, f.Gitea
	}
	return t
}

// Files gives ingress the forge API clients that list the files a pull
// request or push changes, for triggers with paths (the reporters, with
// their credentials); a forge without API credentials has none, and such
// triggers then match.
func (f *Forges) Files() ingress.FilesConfig {
	var c ingress.FilesConfig
	if f.GitHub != nil {
		c.GitHub = f.GitHub
	}
	if f.GitLab != nil {
		c.GitLab = f.GitLab
	}
	if f.Gitea != nil {
		c.Gitea = f.Gitea
	}
	return c
}
