package ingress

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// FilesConfig bounds how ingress learns the files a pull request or push
// changes, for workflows whose triggers have paths or paths_ignore: from
// the payload, else from the event's forge (Config.Forges; without its API
// credentials such files are unknown and the trigger matches,
// Event.Files.Unknown). Nothing is looked up for a delivery no such
// workflow takes.
type FilesConfig struct {
	// Timeout bounds the whole lookup of one delivery (every page), so that
	// the answer reaches the forge in time (forges give up after 10 s or so).
	// Default 5s.
	Timeout time.Duration
}

// DefaultFilesTimeout is FilesConfig.Timeout's default.
const DefaultFilesTimeout = 5 * time.Second

func (c *FilesConfig) setDefaults() {
	if c.Timeout == 0 {
		c.Timeout = DefaultFilesTimeout
	}
}

// Validate reports a negative timeout.
func (c FilesConfig) Validate() error {
	if c.Timeout < 0 {
		return fmt.Errorf("checking the changed files lookup timeout: %v is negative", c.Timeout)
	}
	return nil
}

// changedFiles sets ev.Files when a workflow that may take ev selects by
// changed files: for a pull request from the forge's API, for a push from
// its payload (or the compare API when the payload lists only the first
// commits).
func (s *Server) changedFiles(ctx context.Context, ev *workflows.Event) {
	if ev.Kind != workflows.KindPullRequest && ev.Kind != workflows.KindPush || ev.Files != nil ||
		ev.Push != nil && ev.Push.Deleted {
		return
	}
	wanted := false
	for _, w := range s.src.Workflows() {
		wanted = wanted || w.HasPaths(ev.Kind)
	}
	if !wanted {
		return
	}
	lookup := s.cfg.Forges.Get(ev.Forge)
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
	lctx, cancel := context.WithTimeout(ctx, s.cfg.Files.Timeout)
	defer cancel()
	files, err := lookup.ChangedFiles(lctx, ev)
	if err != nil {
		s.logger.Warn("listing the changed files; triggers with paths match", "forge", ev.Forge, "repo", ev.Repo, "delivery", ev.DeliveryID, "err", err)
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
