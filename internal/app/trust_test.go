package app

import (
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// TestRunnerAdmitsAllowRepos: the runner's check uses the same globs; a
// runner without allow_repos checks nothing.
func TestRunnerAdmitsAllowRepos(t *testing.T) {
	if admitRepos(nil) != nil {
		t.Fatal("admitRepos(nil) should check nothing")
	}
	admit := admitRepos([]string{"myorg/*", "mygroup/**"})
	for repo, ok := range map[string]bool{"MyOrg/app": true, "mygroup/a/b": true, "evil/app": false, "myorg/a/b": false, "": false} {
		err := admit(&workflows.Event{Repo: repo})
		if (err == nil) != ok {
			t.Errorf("admit(%q) = %v, want allowed %v", repo, err, ok)
		}
	}
	if err := admit(&workflows.Event{Repo: "evil/app"}); err == nil || err.Error() != `repository "evil/app" is not in allow_repos` {
		t.Errorf("refusal %v", err)
	}
}
