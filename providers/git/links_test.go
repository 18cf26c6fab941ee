package git_test

import (
	"testing"

	pforge "github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/gitea"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/workflows"
)

// forgeLinks are the real forges' Links, as internal/app's registry gives
// them to git.Config.
func forgeLinks(t *testing.T) func(workflows.Forge) pforge.Links {
	t.Helper()
	gh, err := github.NewForge(github.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gl, err := gitlab.NewForge(gitlab.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gt, err := gitea.NewForge(gitea.Config{BaseURL: "https://gitea.example/"})
	if err != nil {
		t.Fatal(err)
	}
	return pforge.NewRegistry(gh, gl, gt).Links
}
