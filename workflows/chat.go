package workflows

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Chat commands (Kind chat) come from a chat platform, not from a forge: a
// Slack slash command `/hookrun deploy staging` is an event whose Chat says
// who typed it where, and whose Text is "deploy staging". A trigger
// `event: chat, command: deploy, repo: myorg/app` takes it; the run acts on
// that trigger's repository (ChatTarget), which is what its Event.Forge,
// Repo and CloneURL then say, so that checkout and allow_repos apply as for
// any run. Authorization is the workflow's Slack allowlists alone
// (Authorize): the chat user's forge role is unknown.

// DefaultResponseURLPrefix is where Slack's response URLs live; a chat
// run's result is posted only under it (the server's
// slack.response_url_prefix replaces it in tests).
const DefaultResponseURLPrefix = "https://hooks.slack.com/"

// CheckResponseURLPrefix is the rule of a configured response URL
// prefix: an http(s) URL ending in /, as ResponseURLAllowed takes it.
func CheckResponseURLPrefix(prefix string) error {
	if err := ResponseURLAllowed(prefix, prefix+"x"); err != nil {
		return fmt.Errorf("checking slack response URL prefix %q: want an http(s) URL ending in /", prefix)
	}
	return nil
}

// ResponseURLAllowed checks a chat command's response_url against prefix
// (an absolute URL ending in "/"): same scheme and host, a path under the
// prefix's, no credentials, no fragment, written plainly (the string starts
// with the prefix, so what is posted to is what was checked). A signed
// request can still carry any URL; this keeps hookrun from posting a run's
// result anywhere but the chat platform. The error never repeats the URL.
func ResponseURLAllowed(prefix, raw string) error {
	p, err := url.Parse(prefix)
	if err != nil || p.Scheme == "" || p.Host == "" || !strings.HasSuffix(prefix, "/") {
		return errors.New("checking response URL: the allowed prefix is not an absolute URL ending in /")
	}
	if raw == "" {
		return errors.New("checking response URL: the command has none")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Opaque != "":
		return errors.New("checking response URL: not a URL")
	case u.User != nil:
		return errors.New("checking response URL: it carries credentials")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return errors.New("checking response URL: it has a fragment")
	case !strings.EqualFold(u.Scheme, p.Scheme) || !strings.EqualFold(u.Host, p.Host):
		return fmt.Errorf("checking response URL: host %q is not the allowed one (%s)", u.Host, p.Host)
	case !strings.HasPrefix(raw, prefix) || !strings.HasPrefix(u.EscapedPath(), p.EscapedPath()) || strings.Contains(u.Path, ".."):
		return fmt.Errorf("checking response URL: not under %s", prefix)
	}
	return nil
}

// chatForges are the forges a chat trigger's repository may live on (its
// forge: values) and the one a trigger without forge: gets. The workflow
// format names none itself: each forge's package that takes chat runs
// registers its name (RegisterChatForge) when it is initialized.
var chatForges struct {
	sync.RWMutex
	names []Forge
	def   Forge
}

// RegisterChatForge adds name to the forges a chat trigger's forge: may
// name; asDefault makes it what a chat trigger without forge: acts on
// (the first so registered stays the default). Registering a name twice
// is harmless. With no chat forge registered, forge: takes any name and
// has no default.
func RegisterChatForge(name Forge, asDefault bool) {
	chatForges.Lock()
	defer chatForges.Unlock()
	if !slices.Contains(chatForges.names, name) {
		chatForges.names = append(chatForges.names, name)
		slices.Sort(chatForges.names)
	}
	if asDefault && chatForges.def == "" {
		chatForges.def = name
	}
}

// ChatForges are the registered chat forges' names, sorted.
func ChatForges() []Forge {
	chatForges.RLock()
	defer chatForges.RUnlock()
	return slices.Clone(chatForges.names)
}

// DefaultChatForge is the forge of a chat trigger without forge:; "" when
// none is registered as the default.
func DefaultChatForge() Forge {
	chatForges.RLock()
	defer chatForges.RUnlock()
	return chatForges.def
}

// chatForgeNames is the forge: key's enum: nil (any name) when no chat
// forge is registered.
func chatForgeNames() []string {
	var out []string
	for _, f := range ChatForges() {
		out = append(out, string(f))
	}
	return out
}

// ChatTarget is the repository a chat trigger acts on: its forge and
// repo.
func (t *Trigger) ChatTarget() (Forge, string) { return t.Forge, t.Repo }

// chatCommand matches a chat trigger's command against the command's text:
// the first word must be the command, the rest of the text is the
// arguments.
func chatCommand(command string, c *Chat) (string, bool) {
	if c == nil {
		return "", false
	}
	return matchCommand(command, strings.TrimSpace(c.Text))
}
