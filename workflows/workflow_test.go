package workflows

import (
	"strings"
	"testing"
)

// TestHarnessShellScript: which harnesses are shells reading their script
// from hookrun (no ${VAR} substitution), and which are not.
func TestHarnessShellScript(t *testing.T) {
	cases := []struct {
		name string
		h    Harness
		want bool
	}{
		{"built-in shell", BuiltinHarnesses["shell"], true},
		{"sh -c, as Dagu writes shell", Harness{Binary: "sh", PrefixArgs: []string{"-c"}, PromptMode: PromptArg}, true},
		{"/bin/bash -c", Harness{Binary: "/bin/bash", PrefixArgs: []string{"-c"}}, true},
		{"dash -c", Harness{Binary: "dash", PrefixArgs: []string{"-c"}}, true},
		{"/usr/bin/zsh -c", Harness{Binary: "/usr/bin/zsh", PrefixArgs: []string{"-c"}}, true},
		{"ash -c", Harness{Binary: "ash", PrefixArgs: []string{"-c"}}, true},
		{"ksh -c", Harness{Binary: "ksh", PrefixArgs: []string{"-c"}}, true},
		{"mksh -c", Harness{Binary: "mksh", PrefixArgs: []string{"-c"}}, true},
		{"busybox sh -c", Harness{Binary: "busybox", PrefixArgs: []string{"sh", "-c"}}, true},
		{"/bin/busybox ash -c", Harness{Binary: "/bin/busybox", PrefixArgs: []string{"ash", "-c"}}, true},
		{"combined -ec", Harness{Binary: "sh", PrefixArgs: []string{"-ec"}}, true},
		{"combined -euc", Harness{Binary: "bash", PrefixArgs: []string{"-euc"}}, true},
		{"login shell -lc", Harness{Binary: "bash", PrefixArgs: []string{"-lc"}}, true},
		{"-c after other options", Harness{Binary: "bash", PrefixArgs: []string{"-o", "pipefail", "-e", "-c"}}, true},
		{"-c with a script in prefix_args, prompt as $1", Harness{Binary: "sh", PrefixArgs: []string{"-c", `echo "$1"`, "sh"}}, true},
		{"prompt_flag -c", Harness{Binary: "sh", PromptMode: PromptFlag, PromptFlag: "-c"}, true},
		{"prompt_flag -ec", Harness{Binary: "bash", PromptMode: PromptFlag, PromptFlag: "-ec"}, true},
		{"script on stdin", Harness{Binary: "bash", PromptMode: PromptStdin}, true},
		{"busybox sh, script on stdin", Harness{Binary: "busybox", PrefixArgs: []string{"sh", "-s"}, PromptMode: PromptStdin}, true},

		{"sh without -c runs a script file, prompt is $1", Harness{Binary: "sh", PrefixArgs: []string{"./review.sh"}}, false},
		{"sh alone, prompt is a file name", Harness{Binary: "sh"}, false},
		{"bash with a long option only", Harness{Binary: "bash", PrefixArgs: []string{"--norc"}}, false},
		{"sh -x without c", Harness{Binary: "sh", PrefixArgs: []string{"-ex"}}, false},
		{"python -c", Harness{Binary: "python3", PrefixArgs: []string{"-c", "import sys; print(sys.argv[1])"}}, false},
		{"node -e", Harness{Binary: "node", PrefixArgs: []string{"-e"}}, false},
		{"a custom agent", Harness{Binary: "my-agent", PrefixArgs: []string{"--json"}, PromptMode: PromptStdin}, false},
		{"agent with a -c flag", Harness{Binary: "my-agent", PrefixArgs: []string{"-c", "config.toml"}}, false},
		{"busybox other applet", Harness{Binary: "busybox", PrefixArgs: []string{"awk", "-c"}}, false},
		{"busybox alone", Harness{Binary: "busybox", PrefixArgs: []string{"-c"}}, false},
		{"sbx running an agent", Harness{Binary: "sbx", PrefixArgs: []string{"exec", "box", "claude", "-p"}}, false},
		{"a binary named like a shell, in a directory named sh", Harness{Binary: "/opt/sh/agent", PrefixArgs: []string{"-c"}}, false},
		{"built-in claude", BuiltinHarnesses["claude"], false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.h.ShellScript(); got != c.want {
				t.Errorf("%+v.ShellScript() = %v, want %v", c.h, got, c.want)
			}
		})
	}
}

func TestHarnessRunsSbx(t *testing.T) {
	for binary, want := range map[string]bool{
		"sbx": true, "/usr/local/bin/sbx": true, "./bin/sbx": true,
		"sbx-wrapper": false, "/opt/sbx/claude": false, "": false, "claude": false,
	} {
		if got := (Harness{Binary: binary}).RunsSbx(); got != want {
			t.Errorf("Harness{Binary: %q}.RunsSbx() = %v, want %v", binary, got, want)
		}
	}
}

func TestIsEnvName(t *testing.T) {
	for name, want := range map[string]bool{"A": true, "_x1": true, "TICKET_ID": true, "": false, "1A": false, "A-B": false, "A B": false, "é": false} {
		if got := IsEnvName(name); got != want {
			t.Errorf("IsEnvName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestHandlerOnSet: the handlers that are set, in handler_on's order,
// each with its key and step (the default id on_<key>).
func TestHandlerOnSet(t *testing.T) {
	wf, err := Parse("w.yaml", []byte(`name: w
steps:
  - id: a
    run: "true"
handler_on:
  exit:
    run: echo bye
  failure:
    id: page
    run: echo failed
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range wf.HandlerOn.Set() {
		got = append(got, h.Key+"="+h.Step.ID)
	}
	if strings.Join(got, " ") != "failure=page exit=on_exit" {
		t.Errorf("Set() = %v", got)
	}
	if set := new(HandlerOn).Set(); len(set) != 0 {
		t.Errorf("no handlers: %v", set)
	}
}
