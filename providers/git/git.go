package git

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// AuthFunc returns the HTTP credentials for fetching the repository of e, or
// an empty token for anonymous access: the user and token e's forge takes
// (forge.Git's GitCredentials).
type AuthFunc func(ctx context.Context, e *workflows.Event) (user, token string, err error)

// Config configures workspace preparation.
type Config struct {
	// DataDir is hookrun's data directory: mirrors live in
	// <DataDir>/mirrors, workspaces in <DataDir>/workspaces. Required.
	DataDir string
	// GitBinary is the git program, a name looked up in PATH or a path.
	// Default "git".
	GitBinary string
	// Auth, when set, supplies credentials for http(s) clone URLs. They
	// reach git as an `http.extraHeader` set through git's environment
	// configuration (GIT_CONFIG_COUNT), never in the URL, on a command line,
	// or in an error.
	Auth AuthFunc
	// LockPoll is how often a Prepare waiting for another process's lock on
	// a mirror retries. Default 50ms.
	LockPoll time.Duration
	// Origins, when non-nil, confines each forge's clone URLs to its host
	// (Origins.Check): Prepare refuses any other URL, with an error
	// matching contract.ErrRefused, before it asks Auth for credentials or
	// runs git. nil allows every URL: `hookrun run`, tests with local
	// repositories. The servers always set it.
	Origins Origins
	// Drafts, when set, opens the draft pull/merge requests of deliveries
	// with `sandbox.push: pull_request` (internal/app: the forges' API
	// clients); nil: such a delivery pushes the branch and says why there
	// is no draft.
	Drafts contract.DraftOpener
	// Links, when set, is how each forge names a pull request's head ref,
	// its pull requests in text and its branch pages (forge.Registry's
	// Links); nil: every forge the common way (the zero forge.Links).
	Links func(workflows.Forge) forge.Links
	// Owner, when set, is the user host steps run as: Prepare hands the
	// workspace and the run's HOME and TMPDIR to it (the last two private
	// to it, mode 0700); mirrors and everything else stay hookrun's.
	Owner *Owner
}

// Owner is a numeric user and group.
type Owner struct {
	UID, GID int
}

func (c *Config) setDefaults() {
	if c.GitBinary == "" {
		c.GitBinary = "git"
	}
	if c.LockPoll == 0 {
		c.LockPoll = 50 * time.Millisecond
	}
}

// Validate reports a configuration that cannot work.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("validating git config: data_dir is required")
	}
	if c.LockPoll < 0 {
		return errors.New("validating git config: lock poll interval is negative")
	}
	if _, err := exec.LookPath(c.GitBinary); err != nil {
		return fmt.Errorf("validating git config: finding git: %w", err)
	}
	if err := c.Origins.Validate(); err != nil {
		return fmt.Errorf("validating git config: %w", err)
	}
	return nil
}

// Workspaces prepares per-run workspaces from per-repository bare mirrors.
type Workspaces struct {
	cfg        Config
	mirrors    string // <data>/mirrors
	workspaces string // <data>/workspaces
	scratch    string // <data>/scratch: <run>+home, +tmp, +results and the file +event.json (scratchDirs)
	deliveries string // <data>/deliveries: <run>, the repository a delivery pushes from

	earlier earlierLayouts // what New found of the layouts before this one

	mu    sync.Mutex
	locks map[string]chan struct{} // per mirror path; a buffered channel of 1 is a ctx-aware mutex
}

// links are e's forge's Links.
func (w *Workspaces) links(e *workflows.Event) forge.Links {
	if w.cfg.Links == nil {
		return forge.Links{}
	}
	return w.cfg.Links(e.Forge)
}

// New returns Workspaces for cfg, creating the directories it needs.
func New(cfg Config) (*Workspaces, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	data, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("resolving data dir: %w", err)
	}
	w := &Workspaces{
		cfg:        cfg,
		mirrors:    filepath.Join(data, "mirrors"),
		workspaces: filepath.Join(data, "workspaces"),
		scratch:    filepath.Join(data, "scratch"),
		deliveries: filepath.Join(data, "deliveries"),
		locks:      map[string]chan struct{}{},
	}
	for _, d := range []string{w.mirrors, w.workspaces, w.scratch, w.deliveries} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if dev, _ := UnjournaledExt4(data); dev != "" {
		spreadChildren(w.workspaces)
		spreadChildren(w.scratch)
	}
	for i := range runShards {
		for _, d := range []string{w.workspaces, w.scratch} {
			if err := os.MkdirAll(filepath.Join(d, shardName(i)), 0o755); err != nil {
				return nil, fmt.Errorf("creating shard directory: %w", err)
			}
		}
	}
	if w.earlier, err = w.findEarlierLayouts(); err != nil {
		return nil, err
	}
	return w, nil
}

// Dir is where the workspace of runID lives (whether or not it exists):
// <data>/workspaces/<shard>/<runID> (RunShard).
func (w *Workspaces) Dir(runID string) (string, error) {
	if err := checkRunID(runID); err != nil {
		return "", err
	}
	return filepath.Join(w.workspaces, RunShard(runID), runID), nil
}

// runShards is how many directories of <data>/workspaces and
// <data>/scratch hold the runs' directories. On ext4 without a journal
// they lie in as many block groups (spreadChildren), so that the inodes
// the runs free are passed over by a sixteenth of the runs only
// (docs/performance.md, "The run's directories").
const runShards = 16

// RunShard names the directory of <data>/workspaces and <data>/scratch
// that holds runID's directories: one of runShards, by a hash of the id.
func RunShard(runID string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(runID))
	return shardName(int(h.Sum32() % runShards))
}

func shardName(i int) string { return strconv.FormatInt(int64(i), 16) }

// isShardName reports whether name names a shard (one hexadecimal digit).
func isShardName(name string) bool {
	i, err := strconv.ParseUint(name, 16, 64)
	return err == nil && i < runShards && name == shardName(int(i))
}

// earlierLayouts says which layouts before this one New found something
// of under the data dir; only those are cleared per run
// (removeEarlierLayouts), so that a data dir that never held them costs
// no failing system call per run.
type earlierLayouts struct {
	// eventDirs: <data>/scratch/<shard>/<run>+event, the event file's
	// directory of its own.
	eventDirs bool
	// flat: <data>/workspaces/<run> and <data>/scratch/<run>+home (+tmp,
	// +event, +results), and before those <data>/scratch/<run>.
	flat bool
}

// findEarlierLayouts looks, once, at what <data>/workspaces and
// <data>/scratch hold besides the shards, and the shards of scratch besides
// this layout's names. What another process sharing the data dir leaves
// under an earlier layout after this look (an older hookrun, in a rolling
// upgrade) is not cleared by this one's attempts of those runs.
func (w *Workspaces) findEarlierLayouts() (earlierLayouts, error) {
	var l earlierLayouts
	for _, parent := range []string{w.workspaces, w.scratch} {
		entries, err := os.ReadDir(parent)
		if err != nil {
			return l, fmt.Errorf("looking for earlier layouts: %w", err)
		}
		for _, e := range entries {
			if !isShardName(e.Name()) {
				l.flat = true
				continue
			}
			if parent != w.scratch || l.eventDirs {
				continue
			}
			names, err := os.ReadDir(filepath.Join(parent, e.Name()))
			if err != nil {
				return l, fmt.Errorf("looking for earlier layouts: %w", err)
			}
			for _, n := range names {
				if strings.HasSuffix(n.Name(), "+event") {
					l.eventDirs = true
					break
				}
			}
		}
	}
	return l, nil
}

// removeEarlierLayouts removes what an attempt of runID left under the
// layouts before this one that New found in use (earlierLayouts). The
// unsharded ones are left alone for a run id that names a shard (one
// hexadecimal digit): those paths are the shards themselves.
func (w *Workspaces) removeEarlierLayouts(runID string) error {
	var dirs []string
	if w.earlier.eventDirs {
		dirs = append(dirs, filepath.Join(w.scratch, RunShard(runID), runID)+"+event")
	}
	if w.earlier.flat && !isShardName(runID) {
		base := filepath.Join(w.scratch, runID)
		dirs = append(dirs, filepath.Join(w.workspaces, runID), base+"+home", base+"+tmp", base+"+event", base+"+results", base)
	}
	for _, d := range dirs {
		if err := removeDir(d); err != nil {
			return err
		}
	}
	return nil
}

// Prepare creates <data>/workspaces/<shard>/<runID> (Dir), replacing what
// an earlier attempt of the run left there, and the run's HOME, TMPDIR and
// results folder beside each other in <data>/scratch/<shard>, where the
// engine writes the run's event file too (scratchDirs). With checkout the
// workspace holds a clone of the event's repository with a detached HEAD
// at the head commit: the event's head SHA, or, when the event carries
// none, the tip of the pull or merge request's head ref; for an event with
// neither (issues) the repository's default branch. With Config.Owner,
// HOME, TMPDIR and the results folder belong to that user, and so does the
// workspace when o.HostSteps; the shard directory that holds the event
// file stays hookrun's (mode 0755).
//
// The commits come from a bare mirror of the repository under
// <data>/mirrors, fetched from e.CloneURL as needed; Prepares of one
// repository are serialized on it (also across processes sharing the data
// dir), Prepares of different repositories run in parallel.
func (w *Workspaces) Prepare(ctx context.Context, runID string, e *workflows.Event, o contract.PrepareOptions) (contract.Workspace, error) {
	checkout := o.Checkout
	var ws contract.Workspace
	dir, err := w.Dir(runID)
	if err != nil {
		return ws, err
	}
	if err := w.removeEarlierLayouts(runID); err != nil {
		return ws, fmt.Errorf("clearing workspace of run %s: %w", runID, err)
	}
	sha := ""
	if checkout {
		if err := w.Remove(runID); err != nil {
			return ws, fmt.Errorf("clearing workspace of run %s: %w", runID, err)
		}
		if sha, err = w.clone(ctx, runID, dir, e); err != nil {
			return ws, err
		}
	} else if err := mkdirFresh(dir, 0o755); err != nil {
		return ws, fmt.Errorf("creating workspace of run %s: %w", runID, err)
	}
	s := w.scratchDirs(runID)
	// The event file lies in the shard directory, hookrun's and readable
	// by all: steps read the payload there and can neither change nor
	// replace it. HOME, TMPDIR and the results folder ($HOOKRUN_RESULTS,
	// which steps write and hookrun reads after each step) are the step
	// user's, private.
	for _, d := range []struct {
		path string
		perm os.FileMode
	}{{s.home, 0o700}, {s.tmp, 0o700}, {s.results, 0o700}} {
		if err := mkdirFresh(d.path, d.perm); err != nil {
			_ = w.Remove(runID)
			return ws, fmt.Errorf("creating scratch directories of run %s: %w", runID, err)
		}
	}
	tree := dir
	if !o.HostSteps {
		tree = "" // the workspace stays hookrun's; HOME and TMPDIR are still the step user's
	}
	if err := w.handOver(tree, checkout, s.home, s.tmp, s.results); err != nil {
		_ = w.Remove(runID)
		return ws, fmt.Errorf("handing the workspace of run %s to its step user: %w", runID, err)
	}
	return contract.Workspace{Dir: dir, HeadSHA: sha, Home: s.home, TmpDir: s.tmp, EventFile: s.event, Results: s.results}, nil
}

// scratch are the run's directories outside its workspace, and its event
// file.
type scratch struct {
	home, tmp, results string
	event              string // the event file
}

// scratchDirs names the scratch directories of runID: <data>/scratch/<shard>/<runID>+home,
// +tmp and +results, and the event file +event.json, side by side rather
// than under a directory of the run's own, which would be one more
// directory to make and remove per run (ext4's mkdir and rmdir are most of
// a trivial run's directory work, and on ext4 without a journal mounted
// with discard each removal waits for the device: docs/performance.md,
// "hookrun's own cost per run"). A run id has no "+" (checkRunID), so no
// run's names meet another's.
func (w *Workspaces) scratchDirs(runID string) scratch {
	base := filepath.Join(w.scratch, RunShard(runID), runID)
	return scratch{home: base + "+home", tmp: base + "+tmp", results: base + "+results", event: base + "+event.json"}
}

// clone fills dir with a checkout of e's head and returns the SHA.
func (w *Workspaces) clone(ctx context.Context, runID, dir string, e *workflows.Event) (string, error) {
	if e == nil {
		return "", fmt.Errorf("preparing workspace of run %s: checkout needs an event", runID)
	}
	if w.cfg.Origins != nil {
		if err := w.cfg.Origins.Check(e); err != nil {
			return "", fmt.Errorf("preparing workspace of run %s: %w", runID, err)
		}
	}
	plan, err := planFetch(e, w.links(e))
	if err != nil {
		return "", fmt.Errorf("preparing workspace of run %s: %w", runID, err)
	}
	env, err := w.env(ctx, e)
	if err != nil {
		return "", fmt.Errorf("preparing workspace of run %s: getting git credentials: %w", runID, err)
	}
	mirror := filepath.Join(w.mirrors, mirrorName(e))
	sha, err := w.updateMirror(ctx, mirror, e.CloneURL, plan, env)
	if err != nil {
		return "", fmt.Errorf("preparing workspace of run %s: %w", runID, redactURL(err, e.CloneURL))
	}
	if err := w.checkout(ctx, mirror, dir, sha, e.CloneURL); err != nil {
		_ = removeAll(dir)
		return "", fmt.Errorf("preparing workspace of run %s: %w", runID, redactURL(err, e.CloneURL))
	}
	return sha, nil
}

// handOver gives the workspace tree (unless dir is "") and the scratch
// directories to Config.Owner (nothing to do without one). The workspace keeps the modes
// the checkout gave it, so that a container whose image runs as another
// user can still read it; HOME and TMPDIR become private to the owner.
// Without a checkout the workspace is the empty directory Prepare just
// made, so it is not walked.
func (w *Workspaces) handOver(dir string, checkout bool, private ...string) error {
	o := w.cfg.Owner
	if o == nil {
		return nil
	}
	switch {
	case dir == "":
	case !checkout:
		if err := os.Lchown(dir, o.UID, o.GID); err != nil {
			return err
		}
	default:
		err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, o.UID, o.GID)
		})
		if err != nil {
			return err
		}
	}
	for _, d := range private {
		if err := os.Lchown(d, o.UID, o.GID); err != nil {
			return err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes the workspace and scratch directories of runID; missing
// ones are not an error.
func (w *Workspaces) Remove(runID string) error {
	dir, err := w.Dir(runID)
	if err != nil {
		return err
	}
	s := w.scratchDirs(runID)
	// The event file first, but its failure does not keep the directories.
	unlinkErr := syscall.Unlink(s.event)
	for _, d := range []string{dir, s.home, s.tmp, s.results} {
		if err := removeDir(d); err != nil {
			return fmt.Errorf("removing workspace of run %s: %w", runID, err)
		}
	}
	if unlinkErr != nil && !errors.Is(unlinkErr, syscall.ENOENT) {
		return fmt.Errorf("removing the event file of run %s: %w", runID, unlinkErr)
	}
	return nil
}

// mkdir makes directory dir with perm, and its parent (0755) should it be
// gone (New made it; someone may have removed it since).
func mkdir(dir string, perm os.FileMode) error {
	err := os.Mkdir(dir, perm)
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	return os.Mkdir(dir, perm)
}

// mkdirFresh makes dir, empty, with perm: a run's first attempt finds
// none of its directories, so it costs one mkdir, and only a directory an
// earlier attempt left (it ended before its Remove) is removed first.
func mkdirFresh(dir string, perm os.FileMode) error {
	err := mkdir(dir, perm)
	if errors.Is(err, fs.ErrExist) {
		if err = removeDir(dir); err == nil {
			err = mkdir(dir, perm)
		}
	}
	return err
}

// removeDir removes the directory dir and what it holds; a missing one is
// not an error. An empty directory, what a trivial run leaves, costs one
// rmdir (os.RemoveAll tries an unlink first, and lists a directory that
// is not empty before it removes it).
func removeDir(dir string) error {
	err := syscall.Rmdir(dir)
	if err == nil || errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return removeAll(dir)
}

// fetchPlan is what to fetch for an event and how to find the head in it.
type fetchPlan struct {
	refspecs []string // "+src:dst", fetched into the mirror
	sha      string   // the head commit, when the event names it
	headRef  string   // mirror ref holding the head when sha is empty
}

func planFetch(e *workflows.Event, links forge.Links) (fetchPlan, error) {
	var p fetchPlan
	if err := checkCloneURL(e.CloneURL); err != nil {
		return p, err
	}
	if sha := e.HeadSHA(); sha != "" {
		if !workflows.IsCommitID(sha) {
			return p, fmt.Errorf("head SHA %q is not a commit id", sha)
		}
		if strings.Trim(sha, "0") == "" {
			return p, errors.New("head SHA is all zeros (a deleted branch): nothing to check out")
		}
		p.sha = strings.ToLower(sha)
	}
	switch {
	case e.PullRequest != nil:
		n := e.PullRequest.Number
		if n <= 0 {
			return p, fmt.Errorf("pull request number %d is invalid", n)
		}
		ref := links.RequestHead(n)
		p.refspecs = append(p.refspecs, "+"+ref+":"+ref)
		p.headRef = ref
		// The base branch too, so that steps can diff against it.
		if b := e.PullRequest.BaseRef; b != "" {
			if err := checkBranch(b); err != nil {
				return p, err
			}
			p.refspecs = append(p.refspecs, "+refs/heads/"+b+":refs/heads/"+b)
		}
	case e.Push != nil:
		ref := e.Push.Ref
		if ref == "" && e.Push.Branch != "" {
			ref = "refs/heads/" + e.Push.Branch
		}
		if ref != "" {
			if err := checkRef(ref); err != nil {
				return p, err
			}
			p.refspecs = append(p.refspecs, "+"+ref+":"+ref)
			p.headRef = ref
		}
		if p.sha == "" && p.headRef == "" {
			return p, errors.New("push event names neither a SHA nor a ref")
		}
	default:
		p.refspecs = append(p.refspecs, "+HEAD:refs/hookrun/default-head")
		p.headRef = "refs/hookrun/default-head"
	}
	return p, nil
}

// updateMirror creates the mirror if needed, fetches what plan needs and
// returns the head SHA. It holds the mirror's lock throughout.
func (w *Workspaces) updateMirror(ctx context.Context, mirror, cloneURL string, plan fetchPlan, env []string) (string, error) {
	unlock, err := w.lock(ctx, mirror)
	if err != nil {
		return "", err
	}
	defer unlock()

	if _, err := os.Stat(filepath.Join(mirror, "HEAD")); err != nil {
		if err := os.MkdirAll(filepath.Dir(mirror), 0o755); err != nil {
			return "", fmt.Errorf("creating mirror directory: %w", err)
		}
		// Init in a temporary directory and rename, so that a half-made
		// mirror is never taken for a real one.
		tmp, err := os.MkdirTemp(filepath.Dir(mirror), ".init-")
		if err != nil {
			return "", fmt.Errorf("creating mirror: %w", err)
		}
		if _, err := w.git(ctx, "", nil, "init", "--quiet", "--bare", tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return "", err
		}
		// Workspaces hardlink the mirror's objects; never let an automatic
		// gc repack or prune underneath a running clone.
		if _, err := w.git(ctx, tmp, nil, "config", "gc.auto", "0"); err != nil {
			_ = os.RemoveAll(tmp)
			return "", err
		}
		if err := os.Rename(tmp, mirror); err != nil {
			_ = os.RemoveAll(tmp)
			return "", fmt.Errorf("creating mirror: %w", err)
		}
	}

	if plan.sha != "" && w.hasCommit(ctx, mirror, plan.sha) {
		return plan.sha, nil // already here (redelivery, another workflow of the same event)
	}
	args := append([]string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", cloneURL}, plan.refspecs...)
	if _, err := w.git(ctx, mirror, env, args...); err != nil {
		return "", err
	}
	if plan.sha == "" {
		out, err := w.git(ctx, mirror, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", plan.headRef+"^{commit}")
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", plan.headRef, err)
		}
		return strings.TrimSpace(out), nil
	}
	if w.hasCommit(ctx, mirror, plan.sha) {
		return plan.sha, nil
	}
	// The ref moved on (a force push after the event): ask for the commit
	// itself, which servers allow while it is reachable from some ref.
	if _, err := w.git(ctx, mirror, env, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", cloneURL,
		"+"+plan.sha+":refs/hookrun/sha/"+plan.sha); err != nil {
		return "", fmt.Errorf("commit %s not found in %s nor fetchable by id: %w", plan.sha, plan.headRef, err)
	}
	if !w.hasCommit(ctx, mirror, plan.sha) {
		return "", fmt.Errorf("commit %s not found in %s", plan.sha, plan.headRef)
	}
	return plan.sha, nil
}

// checkout clones the mirror into dir (objects hardlinked, so the workspace
// stands alone: it can be bind-mounted into a container or cloned into a
// sandbox) and detaches HEAD at sha.
func (w *Workspaces) checkout(ctx context.Context, mirror, dir, sha, cloneURL string) error {
	if _, err := w.git(ctx, "", nil, "clone", "--quiet", "--no-checkout", "--local", "--", mirror, dir); err != nil {
		return err
	}
	if _, err := w.git(ctx, dir, nil, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", sha, "--"); err != nil {
		return fmt.Errorf("checking out %s: %w", sha, err)
	}
	// Point origin at the forge (without credentials) rather than at the
	// mirror's host path, which means nothing inside a container.
	if u := stripUserinfo(cloneURL); u != "" {
		if _, err := w.git(ctx, dir, nil, "remote", "set-url", "origin", u); err != nil {
			return err
		}
	}
	return nil
}

func (w *Workspaces) hasCommit(ctx context.Context, repo, sha string) bool {
	_, err := w.git(ctx, repo, nil, "cat-file", "-e", "--end-of-options", sha+"^{commit}")
	return err == nil
}

// git runs one git command (never through a shell) and returns its stdout.
// extraEnv carries credentials; it is never part of an error.
func (w *Workspaces) git(ctx context.Context, dir string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, w.cfg.GitBinary, args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		sub := args[0]
		if sub == "-c" && len(args) > 2 {
			sub = args[2]
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", fmt.Errorf("running git %s: %w", sub, ctxErr)
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 1000 {
			msg = msg[len(msg)-1000:]
		}
		if msg != "" {
			return "", fmt.Errorf("running git %s: %w: %s", sub, err, msg)
		}
		return "", fmt.Errorf("running git %s: %w", sub, err)
	}
	return stdout.String(), nil
}

// baseEnv is the runner's environment without GIT_* variables that could
// redirect git (GIT_DIR, GIT_TRACE, ...), with prompts disabled.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "SSH_ASKPASS=true",
		"GIT_SSH_COMMAND=ssh -o BatchMode=yes")
}

// env returns the credentials for fetching e's repository as git
// environment configuration.
func (w *Workspaces) env(ctx context.Context, e *workflows.Event) ([]string, error) {
	if w.cfg.Auth == nil {
		return nil, nil
	}
	u, err := url.Parse(e.CloneURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, nil // ssh and local paths: no HTTP header to send
	}
	user, token, err := w.cfg.Auth(ctx, e)
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, nil
	}
	if user == "" {
		user = "x-access-token"
	}
	cred := base64.StdEncoding.EncodeToString([]byte(user + ":" + token))
	return []string{
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0=Authorization: Basic " + cred,
	}, nil
}

// lock takes the mirror's lock: in this process a ctx-aware mutex, across
// processes an flock(2) on <mirror>.lock.
func (w *Workspaces) lock(ctx context.Context, mirror string) (func(), error) {
	w.mu.Lock()
	ch, ok := w.locks[mirror]
	if !ok {
		ch = make(chan struct{}, 1)
		w.locks[mirror] = ch
	}
	w.mu.Unlock()
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for mirror lock: %w", ctx.Err())
	}
	release := func() { <-ch }

	if err := os.MkdirAll(filepath.Dir(mirror), 0o755); err != nil {
		release()
		return nil, fmt.Errorf("creating mirror directory: %w", err)
	}
	f, err := os.OpenFile(mirror+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		release()
		return nil, fmt.Errorf("opening mirror lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			release()
			return nil, fmt.Errorf("locking mirror: %w", err)
		}
		select {
		case <-time.After(w.cfg.LockPoll):
		case <-ctx.Done():
			_ = f.Close()
			release()
			return nil, fmt.Errorf("waiting for mirror lock: %w", ctx.Err())
		}
	}
	return func() {
		_ = f.Close() // releases the flock
		release()
	}, nil
}

// mirrorName is the mirror's path under <data>/mirrors:
// <forge>/<repo with unsafe bytes %-escaped>.git, one path element per
// repository so that names cannot collide or escape the directory.
func mirrorName(e *workflows.Event) string {
	forge := string(e.Forge)
	if forge == "" {
		forge = "git"
	}
	name := e.Repo
	if name == "" {
		name = stripUserinfo(e.CloneURL)
	}
	esc := escape(name)
	if len(esc) > 200 { // a path element has at most 255 bytes
		sum := sha256.Sum256([]byte(name))
		esc = esc[:180] + "-" + hex.EncodeToString(sum[:8])
	}
	return filepath.Join(escape(forge), esc+".git")
}

func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_',
			c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func checkRunID(id string) error {
	if id == "" || id == "." || id == ".." || len(id) > 200 {
		return fmt.Errorf("run id %q cannot name a workspace", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("run id %q cannot name a workspace", id)
		}
	}
	return nil
}

func checkCloneURL(u string) error {
	switch {
	case u == "":
		return errors.New("event has no clone URL")
	case strings.HasPrefix(u, "-"):
		return errors.New("clone URL starts with a dash")
	case strings.ContainsAny(u, "\x00\n\r"):
		return errors.New("clone URL contains control characters")
	}
	if strings.HasPrefix(strings.ToLower(u), "ext::") {
		return errors.New("clone URL uses the ext transport")
	}
	return nil
}

// checkRef accepts a full ref name that git would, without leading dashes
// or glob characters (refspecs are untrusted text).
func checkRef(ref string) error {
	if !strings.HasPrefix(ref, "refs/") || strings.HasPrefix(ref, "-") || strings.Contains(ref, "..") ||
		strings.Contains(ref, "//") || strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".lock") ||
		strings.Contains(ref, "@{") {
		return fmt.Errorf("ref %q is not a valid ref name", ref)
	}
	for _, c := range ref {
		if c <= ' ' || c == 0x7f || strings.ContainsRune(`~^:?*[\`, c) {
			return fmt.Errorf("ref %q is not a valid ref name", ref)
		}
	}
	return nil
}

func checkBranch(b string) error {
	if b == "" || strings.HasPrefix(b, "-") {
		return fmt.Errorf("branch %q is not a valid branch name", b)
	}
	if err := checkRef("refs/heads/" + b); err != nil {
		return fmt.Errorf("branch %q is not a valid branch name", b)
	}
	return nil
}

// stripUserinfo drops credentials from a URL ("" for a URL with a user but
// unparseable otherwise); plain paths are returned as they are.
func stripUserinfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return raw
	}
	u.User = nil
	return u.String()
}

// redactURL replaces the clone URL in an error by its credential-free form.
type redactedError struct {
	msg string
	err error
}

func (r *redactedError) Error() string { return r.msg }
func (r *redactedError) Unwrap() error { return r.err }

func redactURL(err error, cloneURL string) error {
	clean := stripUserinfo(cloneURL)
	if clean == cloneURL {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), cloneURL, clean)
	if u, perr := url.Parse(cloneURL); perr == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			msg = strings.ReplaceAll(msg, p, "***")
		}
	}
	return &redactedError{msg: msg, err: err}
}

// removeAll removes dir, making read-only directories writable first (Go's
// module cache and some tools leave them).
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

var _ contract.Workspaces = (*Workspaces)(nil)
