package github

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/hookrun/hookrun/workflows"
)

// GitHub's own limits on listing changed files.
const (
	// MaxPullFiles is how many files GET /repos/{o}/{r}/pulls/{n}/files
	// lists at most (30 pages of 100), however many the pull request
	// changes.
	MaxPullFiles = 3000
	// MaxCompareFiles is how many files the compare API lists at most.
	MaxCompareFiles = 300
	filesPerPage    = 100
)

// ChangedFiles implements workflows.ChangedFilesLookup: a pull request's
// files from GET /repos/{owner}/{repo}/pulls/{number}/files (every page,
// Truncated at MaxPullFiles), a push's from GET
// /repos/{owner}/{repo}/compare/{before}...{after} (Truncated at
// MaxCompareFiles). A renamed file counts under both names. Authenticated
// like the reports; ingress bounds ctx.
func (r *Reporter) ChangedFiles(ctx context.Context, e *workflows.Event) (workflows.ChangedFiles, error) {
	if e == nil {
		return workflows.ChangedFiles{}, errors.New("listing changed files on github: no event")
	}
	owner, repo, ok := strings.Cut(e.Repo, "/")
	if !ok || owner == "" || repo == "" {
		return workflows.ChangedFiles{}, fmt.Errorf("listing changed files on github: repository %q is not owner/name", e.Repo)
	}
	c, err := r.client(e.InstallationID)
	if err != nil {
		return workflows.ChangedFiles{}, fmt.Errorf("listing changed files of %s on github: %w", e.Repo, err)
	}
	switch {
	case e.PullRequest != nil && e.PullRequest.Number > 0:
		return pullFiles(ctx, c, owner, repo, e.PullRequest.Number)
	case r.dialect().NoCompareFiles:
		// Its compare answer lists files per commit, not those of the
		// whole range.
		return workflows.ChangedFiles{}, fmt.Errorf("listing changed files of %s on %s: only a pull request's files can be listed", e.Repo, r.cfg.Forge)
	case e.Push != nil && e.Push.Before != "" && e.Push.After != "":
		cmp, _, err := c.Repositories.CompareCommits(ctx, owner, repo, e.Push.Before, e.Push.After, nil)
		if err != nil {
			return workflows.ChangedFiles{}, fmt.Errorf("comparing %s...%s of %s on github: %w", short(e.Push.Before), short(e.Push.After), e.Repo, err)
		}
		var out workflows.ChangedFiles
		for _, f := range cmp.Files {
			out.Paths = appendFile(out.Paths, f)
		}
		out.Truncated = len(cmp.Files) >= MaxCompareFiles
		return out, nil
	}
	return workflows.ChangedFiles{}, fmt.Errorf("listing changed files of %s on github: the event is neither a pull request nor a push", e.Repo)
}

func pullFiles(ctx context.Context, c *gh.Client, owner, repo string, n int) (workflows.ChangedFiles, error) {
	var (
		out   workflows.ChangedFiles
		count int
	)
	opt := &gh.ListOptions{PerPage: filesPerPage, Page: 1}
	for {
		files, resp, err := c.PullRequests.ListFiles(ctx, owner, repo, n, opt)
		if err != nil {
			return workflows.ChangedFiles{}, fmt.Errorf("listing the files of %s/%s#%d on github: %w", owner, repo, n, err)
		}
		for _, f := range files {
			out.Paths = appendFile(out.Paths, f)
		}
		count += len(files)
		if resp.NextPage == 0 || count >= MaxPullFiles {
			break
		}
		opt.Page = resp.NextPage
	}
	out.Truncated = count >= MaxPullFiles
	return out, nil
}

// appendFile adds a changed file's name, and its former name if renamed.
func appendFile(paths []string, f *gh.CommitFile) []string {
	if f == nil {
		return paths
	}
	if name := f.GetFilename(); name != "" {
		paths = append(paths, name)
	}
	if prev := f.GetPreviousFilename(); prev != "" {
		paths = append(paths, prev)
	}
	return paths
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

var _ workflows.ChangedFilesLookup = (*Reporter)(nil)
