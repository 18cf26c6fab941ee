package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/providers/gitlab"
	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/workflows"
)

var cmdRun = flagCommand(flagSpec{name: "run", synopsis: "WORKFLOW.yaml [-p NAME=VALUE]... [--event PAYLOAD.json --event-name NAME] [--forge github|gitlab] [--json]", minArgs: 1, maxArgs: 1, interspersed: true,
	description: `Run one workflow once on this machine, without a server or queue: each step's
log is printed prefixed with its id, then a summary table. The workspace is the
current directory (or --dir) unless the workflow sets checkout: true.
Exit 0 if the run succeeded (also partially: only failures continue_on tolerates;
or was skipped by its preconditions), 1 if it failed, 2 on usage or validation errors.`},
	func(fs *flag.FlagSet) commandFunc {
		eventPath := fs.String("event", "", "webhook payload (JSON) the run is for, as the forge sends it")
		eventName := fs.String("event-name", "", "the payload's event: GitHub X-GitHub-Event (pull_request, issue_comment, issues, push) or GitLab X-Gitlab-Event (\"Merge Request Hook\", ...)")
		forge := fs.String("forge", "github", "forge the payload comes from: github or gitlab")
		asJSON := fs.Bool("json", false, "print the result as JSON on stdout (step logs go to stderr)")
		cache := fs.String("cache", "", "with checkout: true, where the repository mirrors are kept (default: hookrun in the user cache directory); "+
			"the workspace is then a fresh clone of the --event payload's repository at its head, fetched from its clone URL with your own git credentials, and --dir is refused")
		dir := fs.String("dir", "", "workspace directory (default: the current directory)")
		params := paramFlag{}
		fs.Var(params, "p", "NAME=VALUE: a value for one of the workflow's params (repeatable); the value reaches steps as an environment variable")
		return func(ctx context.Context, positional []string, stdout, stderr io.Writer) int {
			wf, err := workflows.ParseFile(positional[0])
			if err != nil {
				fmt.Fprintln(stderr, err)
				return exitUsage
			}
			given, err := wf.SetParams(params)
			if err != nil {
				fmt.Fprintf(stderr, "hookrun run: %v\n", err)
				return exitUsage
			}
			event, err := loadEvent(workflows.Forge(*forge), *eventPath, *eventName)
			if err != nil {
				fmt.Fprintf(stderr, "hookrun run: %v\n", err)
				return exitUsage
			}
			commandArgs(wf, event, stderr)
			workspaces, ok := checkoutWorkspaces(wf, positional[0], *eventPath, *dir, *cache, stderr)
			if !ok {
				return exitUsage
			}
			providers, closer := app.LocalProviders(stderr)
			defer closer.Close()
			return engine.RunLocal(ctx, engine.LocalOptions{
				Workflow:   wf,
				Event:      event,
				Dir:        *dir,
				Params:     given,
				JSON:       *asJSON,
				Stdout:     stdout,
				Stderr:     stderr,
				Providers:  providers,
				SbxHostEnv: app.LocalSbxHostEnv(),
				Workspaces: workspaces,
			})
		}
	})

// commandArgs gives the event the command arguments a delivery's run of wf
// has (HOOKRUN_COMMAND_ARGS): those of the comment's first command line
// that wf's command triggers take, as workflows.Match finds them. A
// delivery starts one run per such line; a local run is the first, and
// says so when there are more.
func commandArgs(wf *workflows.Workflow, event *workflows.Event, stderr io.Writer) {
	m := wf.Match(event)
	if !m.Matched || len(m.Commands) == 0 {
		return
	}
	event.CommandArgs = m.CommandArgs
	if len(m.Commands) > 1 {
		fmt.Fprintf(stderr, "hookrun run: the comment has %d command lines for %s; a delivery runs each, this runs the first (%q)\n",
			len(m.Commands), wf.Name, m.Lines[0])
	}
}

// paramFlag collects -p NAME=VALUE flags.
type paramFlag map[string]string

func (p paramFlag) String() string { return "" }

func (p paramFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || !workflows.IsEnvName(name) {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	if _, dup := p[name]; dup {
		return fmt.Errorf("param %s given twice", name)
	}
	p[name] = value
	return nil
}

// loadEvent normalizes a payload file the way ingress would; no file gives
// an empty event of the forge.
func loadEvent(forge workflows.Forge, path, name string) (*workflows.Event, error) {
	if forge != github.Name && forge != gitlab.Name {
		return nil, fmt.Errorf("--forge must be github or gitlab, got %q", forge)
	}
	if path == "" {
		if name != "" {
			return nil, errors.New("--event-name needs --event PAYLOAD.json")
		}
		return &workflows.Event{Forge: forge, DeliveryID: "local"}, nil
	}
	if name == "" {
		return nil, errors.New("--event needs --event-name (e.g. pull_request)")
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading event: %w", err)
	}
	normalize := github.Normalize
	if forge == gitlab.Name {
		normalize = gitlab.Normalize
	}
	e, err := normalize(name, body, "local")
	if err != nil {
		return nil, fmt.Errorf("normalizing %s: %w", path, err)
	}
	return e, nil
}

// parseInterspersed parses flags that may come before or after positional
// arguments (`hookrun run wf.yaml --json`).
func parseInterspersed(fs *flag.FlagSet, args []string) (positional []string, code int, ok bool) {
	for {
		if code, ok := parseFlags(fs, args); !ok {
			return nil, code, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, 0, true
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), 0, true
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
