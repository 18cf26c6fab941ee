package github

import (
	"slices"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// TestRegistersItself: importing the package makes github a chat forge,
// the default one, and names sbx's github service in the hint for a
// workflow that passes GITHUB_TOKEN into a sandbox: the workflow format
// names no forge itself.
func TestRegistersItself(t *testing.T) {
	if !slices.Contains(workflows.ChatForges(), Name) || workflows.DefaultChatForge() != Name {
		t.Errorf("chat forges %q, default %q: want github among them, the default", workflows.ChatForges(), workflows.DefaultChatForge())
	}
	const wf = `name: w
on: [{event: push}]
harnesses:
  h:
    binary: sbx
    prefix_args: [exec, -e, GITHUB_TOKEN, box, agent]
secrets: [GITHUB_TOKEN]
steps:
  - id: a
    run: "true"
`
	_, err := workflows.Parse("w.yaml", []byte(wf))
	if err == nil || !strings.Contains(err.Error(), "sbx secret set github)") {
		t.Errorf("passing GITHUB_TOKEN into sbx: %v, want the hint naming sbx's github service", err)
	}
}
