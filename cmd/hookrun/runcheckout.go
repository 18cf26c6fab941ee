package main

import (
	"fmt"
	"io"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// checkoutWorkspaces are the checkouts of a workflow with `checkout: true`
// (nil without): the payload's repository at its head, so the run needs
// --event and no --dir. ok is false after a usage error, printed.
func checkoutWorkspaces(wf *workflows.Workflow, file, eventPath, dir, cache string, stderr io.Writer) (ws contract.Workspaces, ok bool) {
	if !wf.Checkout {
		return nil, true
	}
	if eventPath == "" || dir != "" {
		fmt.Fprintf(stderr, "hookrun run: %s sets checkout: true, so the workspace is a clone of the payload's repository at its head: "+
			"give --event PAYLOAD.json --event-name NAME, and no --dir\n", file)
		return nil, false
	}
	w, err := app.LocalWorkspaces(cache)
	if err != nil {
		fmt.Fprintf(stderr, "hookrun run: %v\n", err)
		return nil, false
	}
	return w, true
}
