package ui

import (
	"testing"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

func TestLinks(t *testing.T) {
	cfg := Config{Token: "t", GitHubURL: "https://ghe.example", GitLabURL: "https://gitlab.example/"}
	cfg.setDefaults()
	const sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	for _, tc := range []struct {
		name string
		rec  queue.RunRecord
		want links
	}{
		{"github pull request", queue.RunRecord{CommentID: 42, Event: workflows.Event{Forge: workflows.GitHub, Repo: "Codertocat/Hello-World",
			CloneURL:    "https://github.com/Codertocat/Hello-World.git",
			PullRequest: &workflows.PullRequest{Number: 2, URL: "https://github.com/Codertocat/Hello-World/pull/2", HeadSHA: sha}}},
			links{Repo: "https://github.com/Codertocat/Hello-World", Change: "https://github.com/Codertocat/Hello-World/pull/2",
				Comment: "https://github.com/Codertocat/Hello-World/pull/2#issuecomment-42", Commit: "https://github.com/Codertocat/Hello-World/commit/" + sha}},
		{"gitlab merge request without URLs", queue.RunRecord{CommentID: 7, HeadSHA: sha, Event: workflows.Event{Forge: workflows.GitLab, Repo: "grp/sub/proj",
			PullRequest: &workflows.PullRequest{Number: 5}}},
			links{Repo: "https://gitlab.example/grp/sub/proj", Change: "https://gitlab.example/grp/sub/proj/-/merge_requests/5",
				Comment: "https://gitlab.example/grp/sub/proj/-/merge_requests/5#note_7", Commit: "https://gitlab.example/grp/sub/proj/-/commit/" + sha}},
		{"github issue, configured origin", queue.RunRecord{CommentID: 3, Event: workflows.Event{Forge: workflows.GitHub, Repo: "o/r", Issue: &workflows.Issue{Number: 9}}},
			links{Repo: "https://ghe.example/o/r", Change: "https://ghe.example/o/r/issues/9", Comment: "https://ghe.example/o/r/issues/9#issuecomment-3"}},
		{"push", queue.RunRecord{Event: workflows.Event{Forge: workflows.GitHub, Repo: "o/r", Push: &workflows.Push{After: sha}}},
			links{Repo: "https://ghe.example/o/r", Commit: "https://ghe.example/o/r/commit/" + sha}},
		{"hostile URLs and SHA dropped", queue.RunRecord{HeadSHA: "abc/../x", Event: workflows.Event{Forge: workflows.GitHub, Repo: "o/r", CloneURL: "javascript:alert(1)",
			PullRequest: &workflows.PullRequest{Number: 1, URL: "javascript:alert(2)"}}},
			links{Repo: "https://ghe.example/o/r", Change: "https://ghe.example/o/r/pull/1"}},
		{"api run without repo", queue.RunRecord{Event: workflows.Event{Forge: workflows.GitHub}}, links{}},
	} {
		if got := linksFor(&tc.rec, &cfg); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
