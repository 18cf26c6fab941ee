package ui

import (
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

func TestLinks(t *testing.T) {
	gh, err := github.NewForge(github.Config{APIURL: "https://ghe.example/api/v3"})
	if err != nil {
		t.Fatal(err)
	}
	gl, err := gitlab.NewForge(gitlab.Config{BaseURL: "https://gitlab.example/"})
	if err != nil {
		t.Fatal(err)
	}
	reg := forge.NewRegistry(gh, gl) // as internal/app registers them
	const sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	for _, tc := range []struct {
		name string
		rec  stores.RunRecord
		want links
	}{
		{"github pull request", stores.RunRecord{CommentID: 42, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "Codertocat/Hello-World",
			CloneURL:    "https://github.com/Codertocat/Hello-World.git",
			PullRequest: &workflows.PullRequest{Number: 2, URL: "https://github.com/Codertocat/Hello-World/pull/2", HeadSHA: sha}}},
			links{Repo: "https://github.com/Codertocat/Hello-World", Change: "https://github.com/Codertocat/Hello-World/pull/2",
				Comment: "https://github.com/Codertocat/Hello-World/pull/2#issuecomment-42", Commit: "https://github.com/Codertocat/Hello-World/commit/" + sha}},
		{"gitlab merge request without URLs", stores.RunRecord{CommentID: 7, HeadSHA: sha, Event: workflows.Event{Forge: workflows.Forge("gitlab"), Repo: "grp/sub/proj",
			PullRequest: &workflows.PullRequest{Number: 5}}},
			links{Repo: "https://gitlab.example/grp/sub/proj", Change: "https://gitlab.example/grp/sub/proj/-/merge_requests/5",
				Comment: "https://gitlab.example/grp/sub/proj/-/merge_requests/5#note_7", Commit: "https://gitlab.example/grp/sub/proj/-/commit/" + sha}},
		{"github issue, configured origin", stores.RunRecord{CommentID: 3, Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r", Issue: &workflows.Issue{Number: 9}}},
			links{Repo: "https://ghe.example/o/r", Change: "https://ghe.example/o/r/issues/9", Comment: "https://ghe.example/o/r/issues/9#issuecomment-3"}},
		{"push", stores.RunRecord{Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r", Push: &workflows.Push{After: sha}}},
			links{Repo: "https://ghe.example/o/r", Commit: "https://ghe.example/o/r/commit/" + sha}},
		{"hostile URLs and SHA dropped", stores.RunRecord{HeadSHA: "abc/../x", Event: workflows.Event{Forge: workflows.Forge("github"), Repo: "o/r", CloneURL: "javascript:alert(1)",
			PullRequest: &workflows.PullRequest{Number: 1, URL: "javascript:alert(2)"}}},
			links{Repo: "https://ghe.example/o/r", Change: "https://ghe.example/o/r/pull/1"}},
		{"unconfigured forge: the common layout under its clone URL", stores.RunRecord{CommentID: 4, Event: workflows.Event{Forge: "elsewhere", Repo: "o/r",
			CloneURL: "https://git.example/o/r.git", Issue: &workflows.Issue{Number: 9}}},
			links{Repo: "https://git.example/o/r", Change: "https://git.example/o/r/issues/9", Comment: "https://git.example/o/r/issues/9#issuecomment-4"}},
		{"unconfigured forge without a clone URL: nothing", stores.RunRecord{Event: workflows.Event{Forge: "elsewhere", Repo: "o/r", Issue: &workflows.Issue{Number: 9}}}, links{}},
		{"api run without repo", stores.RunRecord{Event: workflows.Event{Forge: workflows.Forge("github")}}, links{}},
	} {
		if got := linksFor(&tc.rec, reg.Links(tc.rec.Event.Forge)); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
