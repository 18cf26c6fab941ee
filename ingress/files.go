package ingress

import (
	"context"
	"encoding/json"
	"fmt"
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
	// the answer reaches the forge in time (GitHub gives up at 10 s).
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

// payloadCommitCap is how many commits a push payload lists at most when
// it does not say how many there were: past it the compare API tells the
// files.
const payloadCommitCap = 20

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
	if ev.Kind == workflows.KindPush {
		if paths, complete := pushFiles(ev.Raw); complete {
			ev.Files = &workflows.ChangedFiles{Paths: paths}
			return
		}
	}
	lookup := s.cfg.Forges.Get(ev.Forge)
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

// pushFiles reads the files a push changes from its payload, GitHub's,
// GitLab's and Gitea's alike (commits[].added, modified, removed), and
// whether the payload lists every commit: GitLab and Gitea say how many
// there were (total_commits_count, total_commits); GitHub's lists are
// taken as cut at payloadCommitCap.
func pushFiles(raw []byte) (paths []string, complete bool) {
	var p struct {
		Commits []struct {
			Added    []string `json:"added"`
			Removed  []string `json:"removed"`
			Modified []string `json:"modified"`
		} `json:"commits"`
		Total      *int `json:"total_commits_count"`
		GiteaTotal *int `json:"total_commits"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, false
	}
	seen := map[string]bool{}
	for _, c := range p.Commits {
		for _, l := range [][]string{c.Added, c.Removed, c.Modified} {
			for _, f := range l {
				if !seen[f] {
					seen[f] = true
					paths = append(paths, f)
				}
			}
		}
	}
	if p.Total == nil {
		p.Total = p.GiteaTotal
	}
	if p.Total != nil {
		return paths, *p.Total <= len(p.Commits)
	}
	return paths, len(p.Commits) < payloadCommitCap
}
