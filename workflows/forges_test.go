package workflows

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The forges the tests of this package name. The workflow format names
// none itself: each forge's package registers its name (as providers/github
// and providers/gitlab register theirs as chat forges) and its token's sbx
// service.
const (
	GitHub Forge = "github"
	GitLab Forge = "gitlab"
)

func init() {
	RegisterChatForge(GitHub, true)
	RegisterChatForge(GitLab, false)
	RegisterSbxService("GITHUB_TOKEN", "github")
}

// withChatForges runs f with only the chat forges names registered (the
// first as the default), then restores the registration.
func withChatForges(t *testing.T, names []Forge, f func()) {
	t.Helper()
	chatForges.Lock()
	saved, savedDef := chatForges.names, chatForges.def
	chatForges.names, chatForges.def = nil, ""
	chatForges.Unlock()
	defer func() {
		chatForges.Lock()
		chatForges.names, chatForges.def = saved, savedDef
		chatForges.Unlock()
	}()
	for i, n := range names {
		RegisterChatForge(n, i == 0)
	}
	f()
}

const chatOn = `name: w
on:
  - event: chat
    command: deploy
    repo: o/r
%s
authorize: {slack_users: [U1], slack_channels: [C1]}
steps:
  - id: a
    run: "true"
`

// TestChatForgesRegistered: forge: takes the registered chat forges' names
// (the workflow format names none), a trigger without it acts on the
// default, a forge registered later as a default does not replace it, and
// with none registered forge: takes any name and has no default.
func TestChatForgesRegistered(t *testing.T) {
	parse := func(forgeLine string) (*Workflow, error) {
		return Parse("w.yaml", []byte(fmt.Sprintf(chatOn, forgeLine)))
	}
	withChatForges(t, []Forge{"forgeb", "forgea"}, func() {
		RegisterChatForge("forgec", true)
		if got := ChatForges(); !slices.Equal(got, []Forge{"forgea", "forgeb", "forgec"}) {
			t.Errorf("ChatForges = %q, want sorted forgea forgeb forgec", got)
		}
		if w, err := parse(""); err != nil || w.On[0].Forge != "forgeb" {
			t.Errorf("no forge: %v, %+v; want the first default, forgeb", err, w)
		}
		if w, err := parse("    forge: forgec"); err != nil || w.On[0].Forge != "forgec" {
			t.Errorf("forge: forgec: %v; want it taken", err)
		}
		if _, err := parse("    forge: " + string(GitHub)); err == nil || !strings.Contains(err.Error(), `unknown forge "github" (forgea, forgeb, forgec)`) {
			t.Errorf("an unregistered forge: %v, want refused with the registered names", err)
		}
		if !strings.Contains(string(Schema()), `"forgec"`) {
			t.Errorf("the schema's forge enum does not list the registered forges")
		}
	})
	withChatForges(t, nil, func() {
		if w, err := parse("    forge: anywhere"); err != nil || w.On[0].Forge != "anywhere" {
			t.Errorf("none registered, forge: anywhere: %v; want taken", err)
		}
		if w, err := parse(""); err != nil || w.On[0].Forge != "" {
			t.Errorf("none registered, no forge: %v, %+v; want no default", err, w)
		}
	})
}

// TestRegisterSbxService: a variable a forge's package registers gets its
// sbx service in the hint, one nobody registered the placeholder.
func TestRegisterSbxService(t *testing.T) {
	if got := sbxService("FORGE_X_TOKEN"); got != "<service>" {
		t.Fatalf("unregistered: %q, want <service>", got)
	}
	RegisterSbxService("FORGE_X_TOKEN", "forgex")
	defer func() {
		sbxServices.Lock()
		delete(sbxServices.m, "FORGE_X_TOKEN")
		sbxServices.Unlock()
	}()
	if got := sbxService("FORGE_X_TOKEN"); got != "forgex" {
		t.Errorf("registered: %q, want forgex", got)
	}
	if got := sbxService("ANTHROPIC_API_KEY"); got != "anthropic" {
		t.Errorf("a model provider's: %q, want anthropic", got)
	}
}
