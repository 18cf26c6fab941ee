package git

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Deliver pushes the commits an agent made in a run's sandbox, which the
// sandbox collected onto req.Branch of the workspace, to the branch
// hookrun/<workflow>/<number> of the event's base repository (never a
// fork: the event's clone URL is the base repository's), with the forge's
// credentials, and with `push: pull_request` opens a draft pull/merge
// request of it against the pull request's head branch (Config.Drafts).
//
// The workspace is not trusted: steps and the agent could write to it, and
// its hooks or configuration (core.hooksPath, url.*.insteadOf,
// core.fsmonitor, ...) could run code or send the token elsewhere. So no
// git command runs in it: its branch is fetched (git upload-pack, which
// git documents as safe against an untrusted repository) into a temporary
// bare repository of hookrun's own that borrows the mirror's objects, and
// the push leaves from there, to the clone URL Origins allows, with the
// credentials in git's environment only.
//
// Events without a pull or merge request (pushes, issues) are skipped: there
// is no request to deliver to. No commits after req.BaseSHA: nothing is
// pushed. The branch is overwritten (forced) by each run of the workflow on
// the same pull request.
func (w *Workspaces) Deliver(ctx context.Context, req contract.DeliverRequest) (workflows.Delivery, error) {
	var d workflows.Delivery
	e, wf := req.Event, req.Workflow
	if wf == nil || wf.Sandbox == nil {
		return d, fmt.Errorf("delivering run %s: the workflow has no sandbox", req.RunID)
	}
	if e == nil || e.PullRequest == nil || e.PullRequest.Number <= 0 {
		d.Outcome = workflows.DeliverySkipped
		d.Note = "the event has no pull or merge request (a push or an issue) to deliver the agent's commits to: nothing pushed"
		return d, nil
	}
	if err := w.checkDelivery(req); err != nil {
		return d, fmt.Errorf("delivering run %s: %w", req.RunID, err)
	}
	d.Branch = contract.DeliveryBranch(wf.Name, e.PullRequest.Number)
	if err := checkBranch(d.Branch); err != nil {
		return d, fmt.Errorf("delivering run %s: %w", req.RunID, err)
	}
	tmp := filepath.Join(w.deliveries, req.RunID)
	defer func() { _ = removeAll(tmp) }()
	repo, err := w.deliveryRepo(ctx, tmp, filepath.Join(w.mirrors, mirrorName(e)))
	if err != nil {
		return d, fmt.Errorf("delivering run %s: %w", req.RunID, err)
	}
	head, commits, err := w.fetchCollected(ctx, tmp, repo, req)
	if err != nil {
		return d, fmt.Errorf("delivering run %s: %w", req.RunID, err)
	}
	if commits == 0 {
		return workflows.Delivery{Outcome: workflows.DeliveryNoCommits}, nil
	}
	env, err := w.env(ctx, e)
	if err != nil {
		return d, fmt.Errorf("delivering run %s: getting git credentials: %w", req.RunID, err)
	}
	if _, err := w.git(ctx, repo, env, "push", "--quiet", "--force", "--no-verify", "--", e.CloneURL,
		head+":refs/heads/"+d.Branch); err != nil {
		return d, fmt.Errorf("delivering run %s: pushing branch %s: %w", req.RunID, d.Branch, redactURL(err, e.CloneURL))
	}
	d.Outcome, d.Head, d.Commits = workflows.DeliveryPushed, head, commits
	d.BranchURL, d.CompareURL = webLinks(e, w.links(e), req.BaseSHA, d.Branch)
	if wf.Sandbox.Push == workflows.PushPullRequest {
		d.PullRequest, d.Note = w.openDraft(ctx, req, d.Branch)
	}
	return d, nil
}

// checkDelivery refuses what must not be pushed or fetched: a clone URL off
// the forge's origin, a base that is not a commit id, a workspace branch
// that is not a plain branch name.
func (w *Workspaces) checkDelivery(req contract.DeliverRequest) error {
	e := req.Event
	if w.cfg.Origins != nil {
		if err := w.cfg.Origins.Check(e); err != nil {
			return err
		}
	}
	if err := checkCloneURL(e.CloneURL); err != nil {
		return err
	}
	if err := checkRunID(req.RunID); err != nil {
		return err
	}
	if !workflows.IsCommitID(req.BaseSHA) {
		return fmt.Errorf("base %q is not a commit id", req.BaseSHA)
	}
	if err := checkBranch(req.Branch); err != nil {
		return fmt.Errorf("collected %w", err)
	}
	if !filepath.IsAbs(req.Workspace) {
		return fmt.Errorf("workspace %q is not an absolute path", req.Workspace)
	}
	return checkWorkspaceRepo(req.Workspace)
}

// checkWorkspaceRepo refuses a workspace whose repository could make
// upload-pack serve another repository's objects: a .git that is not a
// plain directory (a symlink, or a "gitdir:" file pointing elsewhere), or
// alternates (a checkout hardlinks its objects and has none).
func checkWorkspaceRepo(ws string) error {
	gitDir := filepath.Join(ws, ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("the workspace's .git is not a directory (replaced during the run?)")
	}
	for _, f := range []string{"alternates", "http-alternates"} {
		if _, err := os.Lstat(filepath.Join(gitDir, "objects", "info", f)); err == nil {
			return fmt.Errorf("the workspace's repository borrows objects from elsewhere (objects/info/%s was added during the run)", f)
		}
	}
	return nil
}

// deliveryRepo creates the temporary bare repository a delivery fetches
// into and pushes from, borrowing the mirror's objects (read only: the
// agent's objects never enter the mirror, whose objects every later
// workspace links).
func (w *Workspaces) deliveryRepo(ctx context.Context, tmp, mirror string) (string, error) {
	if err := removeAll(tmp); err != nil {
		return "", fmt.Errorf("clearing delivery repository: %w", err)
	}
	repo := filepath.Join(tmp, "repo.git")
	if _, err := w.git(ctx, "", nil, "init", "--quiet", "--bare", repo); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(mirror, "objects")); err == nil {
		alt := filepath.Join(repo, "objects", "info", "alternates")
		if err := os.WriteFile(alt, []byte(filepath.Join(mirror, "objects")+"\n"), 0o644); err != nil {
			return "", fmt.Errorf("linking the mirror's objects: %w", err)
		}
	}
	return repo, nil
}

// fetchCollected fetches the workspace's collected branch into repo and
// returns its commit and how many commits it has after req.BaseSHA.
func (w *Workspaces) fetchCollected(ctx context.Context, tmp, repo string, req contract.DeliverRequest) (string, int, error) {
	// The workspace belongs to the step user; git refuses to read a
	// repository of another owner unless the global configuration (which
	// reaches upload-pack, unlike -c) names it safe.
	global := filepath.Join(tmp, "gitconfig")
	safe := fmt.Sprintf("[safe]\n\tdirectory = %s\n\tdirectory = %s\n",
		quoteConfig(req.Workspace), quoteConfig(filepath.Join(req.Workspace, ".git")))
	if err := os.WriteFile(global, []byte(safe), 0o644); err != nil {
		return "", 0, fmt.Errorf("writing the delivery's git configuration: %w", err)
	}
	src := (&url.URL{Scheme: "file", Path: req.Workspace}).String()
	const ref = "refs/hookrun/collected"
	if _, err := w.git(ctx, repo, []string{"GIT_CONFIG_GLOBAL=" + global}, "-c", "fetch.fsckObjects=true",
		"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", src, "+refs/heads/"+req.Branch+":"+ref); err != nil {
		return "", 0, fmt.Errorf("fetching the collected branch %s from the workspace: %w", req.Branch, err)
	}
	out, err := w.git(ctx, repo, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return "", 0, fmt.Errorf("resolving the collected branch %s: %w", req.Branch, err)
	}
	head := strings.TrimSpace(out)
	out, err = w.git(ctx, repo, nil, "rev-list", "--count", "--end-of-options", head, "^"+req.BaseSHA)
	if err != nil {
		return "", 0, fmt.Errorf("counting the agent's commits after %s: %w", req.BaseSHA, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return "", 0, fmt.Errorf("counting the agent's commits: %q: %w", out, err)
	}
	return head, n, nil
}

// openDraft opens the draft pull/merge request of a pushed branch against
// the pull request's head branch. It returns what it opened, or a note
// saying why it opened none; the branch is delivered either way.
func (w *Workspaces) openDraft(ctx context.Context, req contract.DeliverRequest, branch string) (*workflows.ChangeRequest, string) {
	e, pr := req.Event, req.Event.PullRequest
	switch {
	case pr.Fork:
		return nil, "the pull request's head branch is in a fork, and a pull request of " + e.Repo +
			" cannot merge into a fork's branch: no draft pull request opened; the branch is in " + e.Repo
	case pr.HeadRef == "" || checkBranch(pr.HeadRef) != nil:
		return nil, "the pull request's head branch is unknown: no draft pull request opened"
	case w.cfg.Drafts == nil:
		return nil, "this runner has no forge API credentials: no draft pull request opened"
	}
	cr, err := w.cfg.Drafts.OpenDraft(ctx, contract.DraftRequest{
		Event: e,
		Head:  branch,
		Base:  pr.HeadRef,
		Title: fmt.Sprintf("hookrun/%s: the agent's commits for %s", req.Workflow.Name, pr.HeadRef),
		Body: fmt.Sprintf("Commits the agent of workflow `%s` made on top of %s (run %s), for %s.\n\nhookrun force-pushes `%s` on the next run.",
			req.Workflow.Name, req.BaseSHA, req.RunID, w.links(e).RequestText(pr.Number), branch),
	})
	if err != nil {
		return nil, "opening the draft pull request failed: " + err.Error()
	}
	return &cr, ""
}

// webLinks are the forge's web pages of a pushed branch and of its commits
// after base (links' Tree and Compare), under the repository's web URL
// (its clone URL without .git).
func webLinks(e *workflows.Event, links forge.Links, base, branch string) (tree, compare string) {
	u, err := url.Parse(stripUserinfo(e.CloneURL))
	if err != nil || u.Host == "" {
		return "", ""
	}
	u.RawQuery, u.Fragment = "", ""
	web := strings.TrimSuffix(strings.TrimSuffix(u.String(), "/"), ".git")
	return links.Tree(web, branch), links.Compare(web, base, branch)
}

// quoteConfig quotes a value for a git configuration file.
func quoteConfig(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

var _ contract.Deliverer = (*Workspaces)(nil)
