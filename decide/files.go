package decide

import (
	"context"
	"fmt"
	"strings"

	"github.com/hookrun/hookrun/workflows"
)

// changedFiles sets ev.Files when a workflow that may take ev selects by
// changed files (paths or paths_ignore): for a pull request from its
// forge's API, for a push from its payload (or the compare API when the
// payload lists only the first commits). Without the forge's API
// credentials such files are unknown and the trigger matches
// (workflows.ChangedFiles.Unknown). Nothing is looked up for an event no
// such workflow takes.
func (d *Decider) changedFiles(ctx context.Context, ev *workflows.Event) {
	if ev.Kind != workflows.KindPullRequest && ev.Kind != workflows.KindPush || ev.Files != nil ||
		ev.Push != nil && ev.Push.Deleted {
		return
	}
	wanted := false
	for _, w := range d.deps.Workflows.Workflows() {
		wanted = wanted || w.HasPaths(ev.Kind)
	}
	if !wanted {
		return
	}
	lookup := d.deps.Forges.Get(ev.Forge)
	if ev.Kind == workflows.KindPush {
		if paths, complete := lookup.PushFiles(ev.Raw); complete {
			ev.Files = &workflows.ChangedFiles{Paths: paths}
			return
		}
	}
	if lookup.Credentials() != nil {
		ev.Files = &workflows.ChangedFiles{Unknown: fmt.Sprintf("no %s API credentials are configured to list them", ev.Forge)}
		return
	}
	if ev.Push != nil && zeroSHA(ev.Push.Before) {
		// A new branch: nothing to compare with, and the payload lists
		// only its first commits.
		ev.Files = &workflows.ChangedFiles{Truncated: true}
		return
	}
	lctx, cancel := context.WithTimeout(ctx, d.cfg.Files.Timeout)
	defer cancel()
	files, err := lookup.ChangedFiles(lctx, ev)
	if err != nil {
		d.log.Warn("listing the changed files; triggers with paths match", "forge", ev.Forge, "repo", ev.Repo, "delivery", ev.DeliveryID, "err", err)
		ev.Files = &workflows.ChangedFiles{Unknown: "the " + string(ev.Forge) + " API did not list them"}
		return
	}
	ev.Files = &files
}

// zeroSHA reports whether sha is the all-zero object id (SHA-1 or SHA-256)
// forges send as the before of a push that creates a branch.
func zeroSHA(sha string) bool {
	return sha != "" && strings.Trim(sha, "0") == ""
}
