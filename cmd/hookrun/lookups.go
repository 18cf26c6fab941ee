package main

import (
	"github.com/hookrun/hookrun/ingress"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/workflows"
)

// trustLookups gives ingress the forge API clients it asks what a payload
// does not say: GitHub's current head of a pull request, for a comment whose
// pull request sent no pull_request event yet; GitLab's merge request head
// and its members' roles. They are the reporters (the same credentials); a
// forge without API credentials has none: comments there whose head was not
// remembered are refused, and GitLab events stay NONE. hookrun_heads comes
// with the queue (ingress takes it from the publisher).
func trustLookups(reps forgeReporters) ingress.TrustConfig {
	var t ingress.TrustConfig
	if gh, ok := reps[workflows.GitHub].(*github.Reporter); ok {
		t.GitHubHeads = gh
	}
	if gl, ok := reps[workflows.GitLab].(*gitlab.Reporter); ok {
		t.GitLabHeads, t.GitLabMembers = gl, gl
	}
	return t
}
