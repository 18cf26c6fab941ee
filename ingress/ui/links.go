package ui

import (
	"strings"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/stores"
)

// links are a run's pages on its forge; empty where unknown.
type links struct {
	Repo    string // the repository
	Change  string // the pull/merge request, else the issue
	Comment string // the sticky comment
	Commit  string // the head commit
}

// linksFor derives rec's forge links from its event, laid out as its
// forge's fl say: the repository from the event's clone URL (so a
// self-hosted forge links to itself), else from the forge's web origin
// and the repo's path; the pull/merge request from the URL in the event,
// else from the repository; the comment from the record's comment id; the
// commit from the resolved head.
func linksFor(rec *stores.RunRecord, fl forge.Links) links {
	ev := &rec.Event
	repo := rec.Repo
	if repo == "" {
		repo = ev.Repo
	}
	l := links{Repo: fl.Repo(ev.CloneURL, repo)}
	switch {
	case ev.PullRequest != nil && forge.WebURL(ev.PullRequest.URL):
		l.Change = ev.PullRequest.URL
	case ev.Issue != nil && forge.WebURL(ev.Issue.URL):
		l.Change = ev.Issue.URL
	case l.Repo == "" || ev.Number() == 0:
	default:
		l.Change = fl.Change(l.Repo, ev.Number(), ev.PullRequest != nil)
	}
	if rec.CommentID != 0 && l.Change != "" {
		l.Comment = fl.Comment(l.Change, rec.CommentID)
	}
	sha := rec.HeadSHA
	if sha == "" {
		sha = ev.HeadSHA()
	}
	if sha != "" && l.Repo != "" && isHex(sha) {
		l.Commit = fl.Commit(l.Repo, sha)
	}
	return l
}

func isHex(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}
