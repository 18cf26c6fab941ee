package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// The command tree is built with spf13/cobra: `--help` on every command,
// `hookrun completion bash|zsh|fish|powershell`, and the API client
// commands (`runs`, `deliveries`, client.go) with POSIX flags. The server
// and tool commands of commands() (validate, schema, serve, ingress,
// runner, run, bench, version) are cobra commands that keep parsing their
// own flags with the standard flag package, exactly as before: every
// existing flag spelling (-config and --config alike) keeps working.

// exitError carries a command's exit code through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// usageError is a command line problem: exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// clientCommand is one command group of the API client, for usage().
type clientCommand struct{ name, summary string }

func clientCommands() []clientCommand {
	return []clientCommand{
		{"runs", "list, inspect, follow, cancel and re-run runs through the API"},
		{"deliveries", "replay a stored webhook delivery through the API"},
		{"sessions", "end every web UI login session through the API (revoke --all)"},
		{"completion", "print a shell completion script (bash, zsh, fish, powershell)"},
	}
}

// newRootCommand builds the tree; output goes to stdout and stderr.
func newRootCommand(ctx context.Context, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "hookrun",
		Short:         "hookrun turns GitHub, GitLab and Gitea webhooks and Slack commands into sandboxed workflow runs",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see 'hookrun %s --help')", err, strings.TrimPrefix(c.CommandPath(), "hookrun "))}
	})
	for _, c := range commands() {
		run := c.run
		root.AddCommand(&cobra.Command{
			Use:                c.name,
			Short:              c.summary,
			DisableFlagParsing: true, // its own flag.FlagSet parses them, --help included
			RunE: func(_ *cobra.Command, args []string) error {
				if code := run(ctx, args, stdout, stderr); code != 0 {
					return exitError{code}
				}
				return nil
			},
		})
	}
	root.AddCommand(newRunsCommand(), newDeliveriesCommand(), newSessionsCommand())
	root.CompletionOptions.HiddenDefaultCmd = false
	return root
}

// execute runs args through the tree and maps the outcome to an exit code:
// a command's own code, exitUsage for a command line problem, 1 for any
// other error (printed as "hookrun <command>: <error>").
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(ctx, stdout, stderr)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\n", c.CommandPath(), err)
		return exitUsage
	case strings.HasPrefix(err.Error(), "unknown command"):
		fmt.Fprintf(stderr, "hookrun: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "%s: %v\n", c.CommandPath(), err)
		return 1
	}
}

// exactArgs is cobra.ExactArgs as a usage error naming what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("want %s, got %d arguments (see '%s --help')", what, len(args), c.CommandPath())}
		}
		return nil
	}
}

// groupRunE is the RunE of a command group (runs, deliveries): an unknown
// subcommand is a usage error, none prints the group's help and exits 2.
func groupRunE(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unknown command %q (see '%s --help')", args[0], c.CommandPath())}
	}
	_ = c.Help()
	return exitError{exitUsage}
}
