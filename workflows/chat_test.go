package workflows

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

const chatWorkflow = `name: slack-deploy
on:
  - event: chat
    command: deploy
    repo: myorg/app
  - event: chat
    command: rollback
    repo: group/sub/project
    forge: gitlab
    if: 'event.Repo == "group/sub/project" && event.Forge == "gitlab"'
authorize:
  slack_users: [U1, U2]
  slack_channels: [C1]
steps:
  - id: a
    run: echo "$HOOKRUN_COMMAND_ARGS"
`

func chatEvent(user, channel, text string) *Event {
	return &Event{Kind: KindChat, Action: "command", Chat: &Chat{Platform: ChatSlack, UserID: user, ChannelID: channel,
		Command: "/hookrun", Text: text, ResponseURL: "https://hooks.slack.com/commands/T1/1/x"}}
}

func TestChatMatchAndAuthorize(t *testing.T) {
	w, err := Parse("slack-deploy.yaml", []byte(chatWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	if w.On[0].Forge != GitHub || w.On[1].Forge != GitLab {
		t.Fatalf("forges %q %q, want github (the default) and gitlab", w.On[0].Forge, w.On[1].Forge)
	}
	cases := []struct {
		name, user, channel, text string
		match                     bool
		trigger                   int
		args                      string
		allowed                   bool
		reason                    string
	}{
		{"deploy", "U1", "C1", "deploy staging", true, 0, "staging", true, "U1 in channel C1 is allowed"},
		{"padded", "U2", "C1", "  deploy   staging now ", true, 0, "staging now", true, "allowed"},
		{"no args", "U1", "C1", "deploy", true, 0, "", true, "allowed"},
		{"second trigger, if over its repo", "U1", "C1", "rollback v1", true, 1, "v1", true, "allowed"},
		{"prefix of a word", "U1", "C1", "deployx staging", false, 0, "", false, "the chat command is not deploy"},
		{"slash form is not the word", "U1", "C1", "/deploy staging", false, 0, "", false, "is not deploy"},
		{"empty text", "U1", "C1", "", false, 0, "", false, "is not deploy"},
		{"user not listed", "U9", "C1", "deploy staging", true, 0, "staging", false, "Slack user U9 is not in authorize.slack_users"},
		{"channel not listed", "U1", "C9", "deploy staging", true, 0, "staging", false, "Slack channel C9 is not in authorize.slack_channels"},
		{"ids are exact", "u1", "C1", "deploy", true, 0, "", false, "Slack user u1 is not"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := chatEvent(c.user, c.channel, c.text)
			m := w.Match(e)
			if m.Matched != c.match {
				t.Fatalf("matched %v (%s), want %v", m.Matched, m.Reason, c.match)
			}
			if !m.Matched {
				if !strings.Contains(m.Reason, c.reason) {
					t.Errorf("reason %q, want it to say %q", m.Reason, c.reason)
				}
				return
			}
			if m.Trigger != c.trigger || m.CommandArgs != c.args || len(m.Commands) != 1 {
				t.Errorf("trigger %d args %q commands %q, want %d %q and one run", m.Trigger, m.CommandArgs, m.Commands, c.trigger, c.args)
			}
			ok, reason := w.Authorize(e)
			if ok != c.allowed || !strings.Contains(reason, c.reason) {
				t.Errorf("authorize %v %q, want %v and %q", ok, reason, c.allowed, c.reason)
			}
		})
	}
}

func TestChatAuthorizeNeedsBothLists(t *testing.T) {
	e := chatEvent("U1", "C1", "deploy")
	for _, a := range []Authorize{
		{},
		{SlackUsers: []string{"U1"}},
		{SlackChannels: []string{"C1"}},
		// forge rules never let a chat user in
		{Users: []string{""}, AuthorAssociation: nil, SlackChannels: []string{"C1"}},
	} {
		w := &Workflow{Name: "w", Authorization: a, On: []Trigger{{Event: KindChat, Command: "deploy", Repo: "o/r", Forge: GitHub}}}
		if ok, reason := w.Authorize(e); ok {
			t.Errorf("%+v: authorized (%s); an empty allowlist must allow nobody", a, reason)
		}
	}
	w := &Workflow{Name: "w", Authorization: Authorize{SlackUsers: []string{"U1"}, SlackChannels: []string{"C1"}}}
	if ok, _ := w.Authorize(&Event{Kind: KindChat}); ok {
		t.Error("a chat event without its Chat was authorized")
	}
}

// TestChatRulesReachBoth: each chat rule alone is refused by the parser
// and by the schema, and the good file passes both.
func TestChatRulesReachBoth(t *testing.T) {
	sch := compileSchema(t)
	judge := func(src string) (schemaErr, parseErr error) {
		var v any
		if err := yaml.Unmarshal([]byte(src), &v); err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(v)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		_, parseErr = Parse("chat.yaml", []byte(src))
		return sch.Validate(inst), parseErr
	}
	if s, p := judge(chatWorkflow); s != nil || p != nil {
		t.Fatalf("good file refused: schema %v, parser %v", s, p)
	}
	allow := "authorize: {slack_users: [U1], slack_channels: [C1]}\nsteps: [{id: a, run: x}]\n"
	for name, src := range map[string]string{
		"slash in a chat command":  "on: [{event: chat, command: /deploy, repo: o/r}]\n" + allow,
		"no slash in a comment's":  "on: [{event: comment, command: deploy}]\n" + allow,
		"chat without command":     "on: [{event: chat, repo: o/r}]\n" + allow,
		"chat without repo":        "on: [{event: chat, command: deploy}]\n" + allow,
		"chat with repos":          "on: [{event: chat, command: deploy, repo: o/r, repos: [o/*]}]\n" + allow,
		"chat with branches":       "on: [{event: chat, command: deploy, repo: o/r, branches: [main]}]\n" + allow,
		"chat with labels":         "on: [{event: chat, command: deploy, repo: o/r, labels: [x]}]\n" + allow,
		"repo on a push":           "on: [{event: push, repo: o/r}]\n" + allow,
		"forge on a comment":       "on: [{event: comment, forge: github}]\n" + allow,
		"a glob as repo":           "on: [{event: chat, command: deploy, repo: 'o/*'}]\n" + allow,
		"no allowlists":            "on: [{event: chat, command: deploy, repo: o/r}]\nsteps: [{id: a, run: x}]\n",
		"no channels":              "on: [{event: chat, command: deploy, repo: o/r}]\nauthorize: {slack_users: [U1]}\nsteps: [{id: a, run: x}]\n",
		"empty users":              "on: [{event: chat, command: deploy, repo: o/r}]\nauthorize: {slack_users: [], slack_channels: [C1]}\nsteps: [{id: a, run: x}]\n",
		"a user name, not an id":   "on: [{event: chat, command: deploy, repo: o/r}]\nauthorize: {slack_users: [alice], slack_channels: [C1]}\nsteps: [{id: a, run: x}]\n",
		"chat with another action": "on: [{event: chat, command: deploy, repo: o/r, actions: [created]}]\n" + allow,
	} {
		t.Run(name, func(t *testing.T) {
			s, p := judge(src)
			if s == nil {
				t.Error("the schema accepts it")
			}
			if p == nil {
				t.Error("the parser accepts it")
			}
		})
	}
}

func TestResponseURLAllowed(t *testing.T) {
	const prefix = DefaultResponseURLPrefix
	for raw, ok := range map[string]bool{
		"https://hooks.slack.com/commands/T1/123/abc": true,
		"https://HOOKS.slack.com/commands/T1/123/abc": false, // not written plainly
		"":                                  false,
		"http://hooks.slack.com/commands/x": false,
		"https://hooks.slack.com.evil.example/commands/x": false,
		"https://evil.example/https://hooks.slack.com/":   false,
		"https://user:pw@hooks.slack.com/commands/x":      false,
		"https://hooks.slack.com@evil.example/commands/x": false,
		"https://hooks.slack.com:444/commands/x":          false,
		"https://hooks.slack.com/commands/x#frag":         false,
		"https://hooks.slack.com/../x":                    false,
		"//hooks.slack.com/commands/x":                    false,
		"hooks.slack.com/commands/x":                      false,
	} {
		if err := ResponseURLAllowed(prefix, raw); (err == nil) != ok {
			t.Errorf("%q: err %v, want allowed %v", raw, err, ok)
		} else if err != nil && raw != "" && strings.Contains(err.Error(), raw) {
			t.Errorf("%q: the error repeats the URL: %v", raw, err)
		}
	}
	if err := ResponseURLAllowed("http://127.0.0.1:9/", "http://127.0.0.1:9/r/1"); err != nil {
		t.Errorf("a test prefix: %v", err)
	}
	if err := ResponseURLAllowed("https://hooks.slack.com", "https://hooks.slack.com/x"); err == nil {
		t.Error("a prefix without its final / was taken")
	}
}

func TestChatEnv(t *testing.T) {
	e := chatEvent("U1", "C1", "deploy staging")
	e.Chat.UserName, e.Chat.ChannelName = "alice", "ops"
	env := map[string]string{}
	for _, v := range e.Env() {
		env[v.Name] = v.Value
	}
	for k, want := range map[string]string{"HOOKRUN_EVENT": "chat", "HOOKRUN_CHAT_USER_ID": "U1", "HOOKRUN_CHAT_USER_NAME": "alice",
		"HOOKRUN_CHAT_CHANNEL_ID": "C1", "HOOKRUN_CHAT_CHANNEL_NAME": "ops", "HOOKRUN_CHAT_TEXT": "deploy staging", "HOOKRUN_CHAT_PLATFORM": "slack"} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	for k, v := range env {
		if strings.Contains(v, "hooks.slack.com") {
			t.Errorf("%s carries the response URL; steps must not get it", k)
		}
	}
}

// TestCheckResponseURLPrefix: the rule ingress and the Slack reporter
// both check their configured prefix with.
func TestCheckResponseURLPrefix(t *testing.T) {
	if err := CheckResponseURLPrefix(DefaultResponseURLPrefix); err != nil {
		t.Errorf("the default prefix: %v", err)
	}
	for _, p := range []string{"", "hooks.slack.com/", "https://hooks.slack.com", "/relative/"} {
		if err := CheckResponseURLPrefix(p); err == nil || !strings.Contains(err.Error(), "want an http(s) URL ending in /") {
			t.Errorf("prefix %q: %v", p, err)
		}
	}
}
