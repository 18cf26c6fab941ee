// Command sbxsim simulates the Docker Sandboxes CLI (`sbx`) for hookrun's
// tests, which cannot run microVMs. It behaves as the page "Run Harness
// Agents in Docker Sandboxes (sbx)" and Docker's git-workflow page say sbx
// behaves:
//
//	sbx create --name N --clone --no-progress AGENT DIR
//	    clones DIR into $SBXSIM_STATE/sandboxes/N/clone (checked out where
//	    DIR's HEAD is, with DIR's remotes except local-path ones), records
//	    AGENT and DIR, and adds the git remote
//	    sandbox-N to DIR, as `sbx create --clone` does. N must be lowercase.
//	    The remote points at the sandbox's "git daemon" ($BOX/daemon), which
//	    exists only while the sandbox runs. Without --clone, DIR itself is
//	    the sandbox's workspace, read-write at its path ("the agent's edits
//	    then appear in the host working tree immediately"), and no remote
//	    is added.
//	sbx exec [-i] [-w DIR] [-u USER] [-e NAME[=VALUE]]... N ARGV...
//	    starts a stopped sandbox first, then runs ARGV "inside" it: in a
//	    private mount and PID namespace where the clone is at DIR's absolute
//	    path (the start directory, unless -w), the host repository is
//	    mounted read-only at /run/sandbox/source, and only PATH, HOME and the
//	    named variables are set (a bare NAME takes its value from sbxsim's
//	    own environment). It exits with ARGV's status (128+signal when
//	    killed). The command is owned by the sandbox, not by `sbx exec`:
//	    killing `sbx exec` leaves it running, with its output going
//	    nowhere, until `sbx stop` or `sbx rm`.
//	sbx stop N              stops everything running in the sandbox and its
//	                        git daemon; the clone is kept.
//	sbx rm [--force|-f] N   stops and removes the sandbox and the
//	                        sandbox-N remote of DIR.
//	sbx ls                  lists sandboxes: NAME AGENT STATUS WORKSPACE.
//
// The state lives in $SBXSIM_STATE, else, as sbx keeps its login and
// sandboxes in the user's home, $XDG_STATE_HOME/sbxsim or
// $HOME/.local/state/sbxsim: a caller that passes sbx only HOME, XDG_* and
// DOCKER_* (hookrun's host steps running sbx) reaches the same sandboxes.
// Every invocation is appended to <state>/argv.log as a JSON array.
// $SBXSIM_FAIL=MODE[:COMMAND] makes COMMAND (or every command) fail with
// the text of the page's troubleshooting table: not-signed-in, policy,
// agent-not-logged-in, not-found, exists, blocked; create-other makes
// create fail with a message of its own that contains "not found".
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// failTexts are the messages of the troubleshooting table, exactly, and
// one create failure that is none of them.
var failTexts = map[string]string{
	"not-signed-in":       "error: not signed in to Docker",
	"policy":              "error: global network policy has not been initialized",
	"agent-not-logged-in": "Not logged in · Please run /login",
	"not-found":           "error: sandbox '%s' not found",
	"exists":              "error: sandbox '%s' already exists",
	"blocked":             "A request from the agent is blocked",
	"create-other":        "error: pulling agent image: manifest for docker/sandbox-templates:claude-code not found",
}

// initArg is the hidden first argument of the process that owns a command
// inside a sandbox.
const initArg = "__sbxsim-init"

func main() {
	if len(os.Args) > 1 && os.Args[1] == initArg {
		sandboxInit()
		return
	}
	state := stateDir()
	if state == "" {
		fatal(2, "sbxsim: none of SBXSIM_STATE, XDG_STATE_HOME and HOME is set")
	}
	logArgv(state, os.Args[1:])
	if len(os.Args) < 2 {
		fatal(2, "usage: sbx COMMAND ...")
	}
	cmd, args := os.Args[1], os.Args[2:]
	if mode, only, _ := strings.Cut(os.Getenv("SBXSIM_FAIL"), ":"); mode != "" && (only == "" || only == cmd) {
		text, ok := failTexts[mode]
		if !ok {
			fatal(2, "sbxsim: unknown SBXSIM_FAIL mode "+mode)
		}
		if strings.Contains(text, "%s") {
			text = fmt.Sprintf(text, sandboxArg(args))
		}
		fatal(1, text)
	}
	sandboxes := filepath.Join(state, "sandboxes")
	switch cmd {
	case "create":
		create(sandboxes, args)
	case "exec":
		execIn(sandboxes, args)
	case "stop":
		for _, n := range names(args, "stop") {
			stop(mustBox(sandboxes, n))
		}
	case "rm":
		for _, n := range names(args, "rm") {
			rm(mustBox(sandboxes, n))
		}
	case "ls":
		ls(sandboxes)
	default:
		fatal(2, fmt.Sprintf("error: unknown command %q for \"sbx\"", cmd))
	}
}

// validName is what sbx accepts as a sandbox name.
var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// box is one sandbox's state directory.
type box struct {
	name, dir string
}

func (b box) clone() string  { return filepath.Join(b.dir, "clone") }
func (b box) daemon() string { return filepath.Join(b.dir, "daemon") }
func (b box) procs() string  { return filepath.Join(b.dir, "procs") }
func (b box) stopped() bool  { _, err := os.Stat(filepath.Join(b.dir, "stopped")); return err == nil }
func (b box) read(f string) string {
	data, _ := os.ReadFile(filepath.Join(b.dir, f))
	return strings.TrimSpace(string(data))
}
func (b box) workspace() string { return b.read("workspace") }
func (b box) cloned() bool      { return b.read("mode") == "clone" }
func (b box) remote() string    { return "sandbox-" + b.name }

func mustBox(sandboxes, name string) box {
	b := box{name: name, dir: filepath.Join(sandboxes, name)}
	if _, err := os.Stat(b.dir); err != nil {
		fatal(1, fmt.Sprintf("error: sandbox '%s' not found", name))
	}
	return b
}

func create(sandboxes string, args []string) {
	var name string
	clone := false
	var pos []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--name" && i+1 < len(args):
			i++
			name = args[i]
		case strings.HasPrefix(a, "--name="):
			name = strings.TrimPrefix(a, "--name=")
		case a == "--clone":
			clone = true
		case a == "--no-progress":
		case strings.HasPrefix(a, "-"):
			fatal(2, fmt.Sprintf("error: unknown flag: %s", a))
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 || name == "" {
		fatal(2, "error: usage: sbx create --name NAME [--clone] AGENT WORKSPACE")
	}
	if !validName.MatchString(name) {
		fatal(2, fmt.Sprintf("error: invalid sandbox name '%s': use lowercase letters, digits, '.', '_' and '-'", name))
	}
	agent, dir := pos[0], pos[1]
	abs, err := filepath.Abs(dir)
	if err != nil {
		fatal(1, "error: "+err.Error())
	}
	b := box{name: name, dir: filepath.Join(sandboxes, name)}
	if _, err := os.Stat(b.dir); err == nil {
		fatal(1, fmt.Sprintf("error: sandbox '%s' already exists", name))
	}
	for _, d := range []string{b.dir, b.procs()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			fatal(1, "error: "+err.Error())
		}
	}
	if !clone {
		// The workspace itself, read-write: the agent's edits appear in
		// the host working tree at once.
		write(b, "agent", agent)
		write(b, "workspace", abs)
		start(b)
		fmt.Fprintf(os.Stderr, "Created sandbox %s (agent %s, workspace %s)\n", name, agent, abs)
		return
	}
	write(b, "mode", "clone")
	git("", "clone", "--quiet", "--no-hardlinks", abs, b.clone())
	// Check out what the workspace has checked out (a branch, or a detached HEAD).
	if _, err := gitOut(abs, "symbolic-ref", "-q", "HEAD"); err != nil {
		head, err := gitOut(abs, "rev-parse", "HEAD")
		if err != nil {
			fatal(1, "error: reading HEAD of "+abs)
		}
		git(b.clone(), "checkout", "--quiet", "--detach", strings.TrimSpace(head))
	}
	// The host repository's remotes are copied into the clone, except
	// local-path ones, which are not reachable from inside.
	git(b.clone(), "remote", "remove", "origin")
	if out, err := gitOut(abs, "remote"); err == nil {
		for _, r := range strings.Fields(out) {
			url, err := gitOut(abs, "remote", "get-url", r)
			if url = strings.TrimSpace(url); err != nil || strings.HasPrefix(r, "sandbox-") || localURL(url) {
				continue
			}
			git(b.clone(), "remote", "add", r, url)
		}
	}
	write(b, "agent", agent)
	write(b, "workspace", abs)
	start(b)
	if _, err := gitOut(abs, "remote", "get-url", b.remote()); err == nil {
		git(abs, "remote", "set-url", b.remote(), b.daemon())
	} else {
		git(abs, "remote", "add", b.remote(), b.daemon())
	}
	fmt.Fprintf(os.Stderr, "Created sandbox %s (agent %s, clone of %s)\n", name, agent, abs)
}

// localURL reports whether a remote URL is a path on this machine.
func localURL(url string) bool {
	if strings.HasPrefix(url, "file://") || strings.HasPrefix(url, "/") || strings.HasPrefix(url, ".") {
		return true
	}
	if strings.Contains(url, "://") {
		return false
	}
	host, _, scp := strings.Cut(url, ":") // user@host:path
	return !scp || strings.Contains(host, "/")
}

// start starts a stopped sandbox: its git daemon answers again.
func start(b box) {
	_ = os.Remove(filepath.Join(b.dir, "stopped"))
	if _, err := os.Lstat(b.daemon()); err != nil {
		if err := os.Symlink(b.clone(), b.daemon()); err != nil {
			fatal(1, "error: starting sandbox: "+err.Error())
		}
	}
}

// stop ends everything running in the sandbox (each command's init, PID 1
// of its namespace, takes its processes with it) and its git daemon.
func stop(b box) {
	entries, _ := os.ReadDir(b.procs())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && syscall.Kill(pid, 0) == nil && !zombie(pid); {
			time.Sleep(5 * time.Millisecond)
		}
		_ = os.Remove(filepath.Join(b.procs(), e.Name()))
	}
	_ = os.Remove(b.daemon())
	write(b, "stopped", "")
}

func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// rm stops the sandbox and removes it and its remote in the host
// repository.
func rm(b box) {
	stop(b)
	if ws := b.workspace(); ws != "" {
		if _, err := gitOut(ws, "remote", "get-url", b.remote()); err == nil {
			git(ws, "remote", "remove", b.remote())
		}
	}
	if err := os.RemoveAll(b.dir); err != nil {
		fatal(1, "error: "+err.Error())
	}
}

func ls(sandboxes string) {
	entries, _ := os.ReadDir(sandboxes)
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 3, ' ', 0)
	fmt.Fprintln(w, "SANDBOX\tAGENT\tSTATUS\tWORKSPACE")
	for _, e := range entries {
		b := box{name: e.Name(), dir: filepath.Join(sandboxes, e.Name())}
		status := "running"
		if b.stopped() {
			status = "stopped"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", b.name, b.read("agent"), status, b.workspace())
	}
	_ = w.Flush()
}

func names(args []string, cmd string) []string {
	var out []string
	for _, a := range args {
		if a == "--force" || a == "-f" {
			continue
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		fatal(2, fmt.Sprintf("error: usage: sbx %s SANDBOX...", cmd))
	}
	return out
}

// initSpec is what the init of a command in a sandbox is told.
type initSpec struct {
	Workspace string   // the host repository; the clone is mounted over it
	Clone     string   // the sandbox's clone; "" without --clone (the workspace itself, read-write)
	Dir       string   // start directory
	Argv      []string // the command
	Env       []string // its whole environment
	Stdin     bool
}

func execIn(sandboxes string, args []string) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	dir, stdin := "", false
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		switch a := args[i]; a {
		case "-i", "--interactive":
			stdin = true
		case "-e", "--env", "-w", "--workdir", "-u", "--user":
			if i+1 >= len(args) {
				fatal(2, "error: flag needs an argument: "+a)
			}
			i++
			v := args[i]
			switch a {
			case "-e", "--env":
				if !strings.Contains(v, "=") {
					val, ok := os.LookupEnv(v)
					if !ok {
						continue // docker exec drops a bare name that is unset
					}
					v += "=" + val
				}
				env = append(env, v)
			case "-w", "--workdir":
				dir = v
			}
		default:
			fatal(2, "error: unknown flag: "+a)
		}
	}
	if len(args)-i < 2 {
		fatal(2, "error: usage: sbx exec [flags] SANDBOX COMMAND [ARG...]")
	}
	name, argv := args[i], args[i+1:]
	b := mustBox(sandboxes, name)
	if b.stopped() {
		start(b) // sbx exec starts a stopped sandbox first
	}
	if dir == "" {
		dir = b.workspace()
	}
	is := initSpec{Workspace: b.workspace(), Dir: dir, Argv: argv, Env: env, Stdin: stdin}
	if b.cloned() {
		is.Clone = b.clone()
	}
	spec, _ := json.Marshal(is)
	self, err := os.Executable()
	if err != nil {
		fatal(1, "sbxsim: "+err.Error())
	}
	// The command starts only once it is registered (its pid file, which
	// sbx stop reads): an sbx exec ended in between (a stopped step's
	// SIGTERM) would otherwise leave it running where no sbx stop finds it.
	// The init waits for a byte on this pipe; EOF means nothing runs.
	gate, release, err := os.Pipe()
	if err != nil {
		fatal(126, "error: starting command in sandbox: "+err.Error())
	}
	c := exec.Command(self, initArg)
	c.Env = []string{"SBXSIM_INIT=" + string(spec)}
	c.ExtraFiles = []*os.File{gate}
	// Pipes, never this process's own descriptors: the command must not
	// hold the caller's pipes open once `sbx exec` is gone.
	c.Stdout, c.Stderr = struct{ io.Writer }{os.Stdout}, struct{ io.Writer }{os.Stderr}
	if stdin {
		c.Stdin = struct{ io.Reader }{os.Stdin}
	}
	// Its own session and namespaces: the sandbox owns it, not sbx exec.
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID}
	if err := c.Start(); err != nil {
		if !errors.Is(err, syscall.EPERM) {
			fatal(126, "error: starting command in sandbox: "+err.Error())
		}
		// Not root: an unprivileged user namespace gives the same mounts.
		uid, gid := os.Getuid(), os.Getgid()
		c = rebuild(c)
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true,
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}}
		if err := c.Start(); err != nil {
			fatal(126, "error: starting command in sandbox: "+err.Error())
		}
	}
	_ = gate.Close()
	if d, err := time.ParseDuration(os.Getenv("SBXSIM_REGISTER_DELAY")); err == nil {
		time.Sleep(d) // tests: a busy machine between the start and the registration
	}
	pidFile := filepath.Join(b.procs(), strconv.Itoa(c.Process.Pid))
	_ = os.WriteFile(pidFile, nil, 0o644)
	_, _ = release.Write([]byte{1})
	_ = release.Close()
	err = c.Wait()
	_ = os.Remove(pidFile)
	exitAs(err)
	fatal(126, "error: "+err.Error())
}

// exitAs exits as the command that ended with err did (128+signal when
// killed); it returns only when the command did not run to an exit.
func exitAs(err error) {
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(exitErr.ExitCode())
	}
}

func rebuild(c *exec.Cmd) *exec.Cmd {
	n := exec.Command(c.Path, c.Args[1:]...)
	n.Env, n.Stdin, n.Stdout, n.Stderr, n.ExtraFiles = c.Env, c.Stdin, c.Stdout, c.Stderr, c.ExtraFiles
	return n
}

// sandboxInit is PID 1 of a command's namespaces: it mounts the sandbox's
// view (the clone at the workspace's path, the host repository read-only at
// /run/sandbox/source), runs the command, relays its output as long as
// someone reads it and drains it after, and exits with its status; the
// kernel then ends whatever the command left.
func sandboxInit() {
	var spec initSpec
	if err := json.Unmarshal([]byte(os.Getenv("SBXSIM_INIT")), &spec); err != nil || len(spec.Argv) == 0 {
		fatal(2, "sbxsim init: bad spec")
	}
	// sbx exec's gate (execIn): the command runs only once registered.
	gate := os.NewFile(3, "gate")
	if n, _ := gate.Read(make([]byte, 1)); n != 1 {
		os.Exit(126) // sbx exec ended before it registered the command
	}
	_ = gate.Close()
	if err := mountView(spec); err != nil {
		fatal(126, "sbxsim init: mounting the sandbox view: "+err.Error())
	}
	c := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	if lp, err := lookPath(spec.Argv[0], spec.Env); err == nil {
		c.Path, c.Err = lp, nil
	} else {
		fatal(127, fmt.Sprintf("OCI runtime exec failed: exec: %q: executable file not found in $PATH", spec.Argv[0]))
	}
	c.Dir, c.Env = spec.Dir, spec.Env
	c.Stdout, c.Stderr = drain{os.Stdout}, drain{os.Stderr}
	if spec.Stdin {
		c.Stdin = os.Stdin
	}
	err := c.Run()
	exitAs(err)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fatal(126, fmt.Sprintf("OCI runtime exec failed: chdir to %q: no such file or directory", spec.Dir))
	default:
		fatal(126, "OCI runtime exec failed: "+err.Error())
	}
}

// source is where the host repository is visible, read-only, in clone mode.
const source = "/run/sandbox/source"

func mountView(spec initSpec) error {
	steps := []struct {
		src, dst, fstype string
		flags            uintptr
	}{
		{"", "/", "", syscall.MS_REC | syscall.MS_PRIVATE},
		{"tmpfs", "/run", "tmpfs", 0}, // the sandbox's own /run (no host sockets)
	}
	for _, s := range steps {
		if err := syscall.Mount(s.src, s.dst, s.fstype, s.flags, ""); err != nil {
			return fmt.Errorf("mount %s: %w", s.dst, err)
		}
	}
	if spec.Clone == "" {
		return nil
	}
	if err := os.MkdirAll(source, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount(spec.Workspace, source, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("mount %s: %w", source, err)
	}
	if err := syscall.Mount("", source, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", source, err)
	}
	if err := syscall.Mount(spec.Clone, spec.Workspace, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("mount the clone at %s: %w", spec.Workspace, err)
	}
	return nil
}

func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(p) {
				f := filepath.Join(d, file)
				if st, err := os.Stat(f); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return f, nil
				}
			}
		}
	}
	return "", exec.ErrNotFound
}

// drain writes to w while w takes it, then discards: a command whose
// `sbx exec` is gone keeps running.
type drain struct{ w io.Writer }

func (d drain) Write(p []byte) (int, error) {
	_, _ = d.w.Write(p)
	return len(p), nil
}

func write(b box, f, content string) {
	if err := os.WriteFile(filepath.Join(b.dir, f), []byte(content+"\n"), 0o644); err != nil {
		fatal(1, "error: "+err.Error())
	}
}

func git(dir string, args ...string) {
	c := exec.Command("git", args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		fatal(1, fmt.Sprintf("error: git %s: %v: %s", strings.Join(args, " "), err, out))
	}
}

func gitOut(dir string, args ...string) (string, error) {
	c := exec.Command("git", args...)
	c.Dir = dir
	out, err := c.Output()
	return string(out), err
}

func logArgv(state string, argv []string) {
	if err := os.MkdirAll(state, 0o755); err != nil {
		fatal(1, "sbxsim: "+err.Error())
	}
	f, err := os.OpenFile(filepath.Join(state, "argv.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fatal(1, "sbxsim: "+err.Error())
	}
	defer f.Close()
	b, _ := json.Marshal(argv)
	fmt.Fprintf(f, "%s\n", b)
}

// sandboxArg is the sandbox a command names: --name's value, else the
// first argument that is neither a flag nor a flag's value.
func sandboxArg(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--name" && i+1 < len(args):
			return args[i+1]
		case a == "-e" || a == "--env" || a == "-w" || a == "--workdir" || a == "-u" || a == "--user":
			i++
		case !strings.HasPrefix(a, "-"):
			return a
		}
	}
	return ""
}

func fatal(code int, msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(code)
}

// stateDir is where the simulator keeps its sandboxes (see the package doc).
func stateDir() string {
	if d := os.Getenv("SBXSIM_STATE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "sbxsim")
	}
	if d := os.Getenv("HOME"); d != "" {
		return filepath.Join(d, ".local", "state", "sbxsim")
	}
	return ""
}
