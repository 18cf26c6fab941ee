package ui

import (
	"strconv"
	"strings"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// links are a run's pages on its forge; empty where unknown.
type links struct {
	Repo    string // the repository
	Change  string // the pull/merge request, else the issue
	Comment string // the sticky comment
	Commit  string // the head commit
}

// linksFor derives rec's forge links from its event: the repository from
// the event's clone URL (so GitHub Enterprise and self-managed GitLab link
// to themselves), else from the forge's web origin in cfg and the repo's
// path; the pull/merge request from the URL in the event, else from the
// repository; the comment from the record's comment id; the commit from the
// resolved head.
func linksFor(rec *queue.RunRecord, cfg *Config) links {
	ev := &rec.Event
	gitlab := ev.Forge == workflows.GitLab
	var l links
	repo := rec.Repo
	if repo == "" {
		repo = ev.Repo
	}
	switch {
	case webURL(ev.CloneURL):
		l.Repo = strings.TrimSuffix(strings.TrimRight(ev.CloneURL, "/"), ".git")
	case repo != "" && gitlab:
		l.Repo = cfg.GitLabURL + "/" + repo
	case repo != "":
		l.Repo = cfg.GitHubURL + "/" + repo
	}
	n := strconv.Itoa(ev.Number())
	switch {
	case ev.PullRequest != nil && webURL(ev.PullRequest.URL):
		l.Change = ev.PullRequest.URL
	case ev.Issue != nil && webURL(ev.Issue.URL):
		l.Change = ev.Issue.URL
	case l.Repo == "" || ev.Number() == 0:
	case gitlab && ev.PullRequest != nil:
		l.Change = l.Repo + "/-/merge_requests/" + n
	case gitlab:
		l.Change = l.Repo + "/-/issues/" + n
	case ev.PullRequest != nil:
		l.Change = l.Repo + "/pull/" + n
	default:
		l.Change = l.Repo + "/issues/" + n
	}
	if rec.CommentID != 0 && l.Change != "" {
		id := strconv.FormatInt(rec.CommentID, 10)
		if gitlab {
			l.Comment = l.Change + "#note_" + id
		} else {
			l.Comment = l.Change + "#issuecomment-" + id
		}
	}
	sha := rec.HeadSHA
	if sha == "" {
		sha = ev.HeadSHA()
	}
	if sha != "" && l.Repo != "" && isHex(sha) {
		if gitlab {
			l.Commit = l.Repo + "/-/commit/" + sha
		} else {
			l.Commit = l.Repo + "/commit/" + sha
		}
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
