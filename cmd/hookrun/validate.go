package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/hookrun/hookrun/workflows"
)

var cmdValidate = flagCommand(flagSpec{name: "validate", synopsis: "PATH...", minArgs: 1, maxArgs: -1,
	description: `Check workflow files (files, or directories of *.yaml and *.yml files). Every
problem is printed as file:line:col: message. Exits 1 if there is any problem,
2 on usage errors, else 0 with a one-line summary. With --server, also the
rules of serve and runner (a root working_dir inside the run's workspace).`},
	func(fs *flag.FlagSet) commandFunc {
		server := fs.Bool("server", false, "check as the server loads them (serve, runner): a root working_dir must stay inside the workspace")
		return func(_ context.Context, args []string, stdout, stderr io.Writer) int {
			wfs, err := workflows.LoadWith(workflows.ParseOptions{Server: *server}, args...)
			if err != nil {
				var problems workflows.Problems
				if errors.As(err, &problems) {
					for _, p := range problems {
						fmt.Fprintln(stdout, p.Error())
					}
					fmt.Fprintf(stderr, "%d problem(s) in %s\n", len(problems), plural(countFiles(problems), "file"))
					return 1
				}
				fmt.Fprintf(stderr, "hookrun validate: %v\n", err)
				return 1
			}
			fmt.Fprintf(stdout, "ok: %s valid\n", plural(len(wfs), "workflow"))
			return 0
		}
	})

func countFiles(ps workflows.Problems) int {
	seen := map[string]bool{}
	for _, p := range ps {
		seen[p.File] = true
	}
	return len(seen)
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func cmdSchema(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schema", "",
		"Print the JSON Schema (draft 2020-12) of the workflow format. Point your editor's\n"+
			"YAML language server at it for completion and inline errors.", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if _, err := stdout.Write(workflows.Schema()); err != nil {
		return 1
	}
	return 0
}
