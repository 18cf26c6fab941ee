// Command sbxsim simulates the Docker Sandboxes CLI (`sbx`) for hookrun's
// tests, which cannot run microVMs. It keeps the lifecycle faithful:
//
//	sbx create --name N --clone --no-progress AGENT DIR
//	    clones DIR into $SBXSIM_STATE/sandboxes/N/clone (checked out where DIR's
//	    HEAD is), records AGENT, and adds the git remote sandbox-N to DIR
//	    pointing at the clone, as `sbx create --clone` does.
//	sbx exec [-i] [-w DIR] [-u USER] [-e NAME[=VALUE]]... N ARGV...
//	    runs ARGV in the clone (or DIR) with only PATH, HOME and the named
//	    variables (a bare NAME takes its value from sbxsim's own
//	    environment); exits with ARGV's status (128+signal when killed).
//	sbx rm [--force|-f] N   removes the sandbox; leaves the remote in DIR.
//	sbx ls                  lists sandboxes.
//
// Every invocation is appended to $SBXSIM_STATE/argv.log as a JSON array.
// $SBXSIM_FAIL=MODE[:COMMAND] makes COMMAND (or every command) fail with
// the text sbx prints: not-signed-in, not-logged-in, policy, exists,
// not-found.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

var failTexts = map[string]string{
	"not-signed-in": "list local sandboxes: list runtimes: request failed: 401 Unauthorized: docker session has expired\nno valid user session found, please sign in to Docker to proceed",
	"not-logged-in": "ERROR: user is not authenticated to Docker",
	"policy":        `ERROR: the global network policy is not initialized; run "sbx policy init" to choose one`,
	"exists":        `ERROR: sandbox %q already exists`,
	"not-found":     `ERROR: sandbox %q not found`,
}

func main() {
	state := os.Getenv("SBXSIM_STATE")
	if state == "" {
		fatal(2, "sbxsim: SBXSIM_STATE is not set")
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
		if strings.Contains(text, "%q") {
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
	case "rm":
		rm(sandboxes, args)
	case "ls":
		entries, _ := os.ReadDir(sandboxes)
		fmt.Println("SANDBOX")
		for _, e := range entries {
			fmt.Println(e.Name())
		}
	default:
		fatal(2, fmt.Sprintf("ERROR: unknown command %q for \"sbx\"", cmd))
	}
}

func create(sandboxes string, args []string) {
	var name, agent, dir string
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
			fatal(2, fmt.Sprintf("ERROR: unknown flag: %s", a))
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 || name == "" {
		fatal(2, "ERROR: usage: sbx create --name NAME [--clone] AGENT WORKSPACE")
	}
	agent, dir = pos[0], pos[1]
	if !clone {
		fatal(2, "sbxsim: only clone mode (--clone) is simulated")
	}
	box := filepath.Join(sandboxes, name)
	if _, err := os.Stat(box); err == nil {
		fatal(1, fmt.Sprintf("ERROR: sandbox %q already exists", name))
	}
	if err := os.MkdirAll(box, 0o755); err != nil {
		fatal(1, "ERROR: "+err.Error())
	}
	cloneDir := filepath.Join(box, "clone")
	git("", "clone", "--quiet", "--no-hardlinks", dir, cloneDir)
	// Check out what the workspace has checked out (a branch, or a detached HEAD).
	if _, err := gitOut(dir, "symbolic-ref", "-q", "HEAD"); err != nil {
		head, err := gitOut(dir, "rev-parse", "HEAD")
		if err != nil {
			fatal(1, "ERROR: reading HEAD of "+dir)
		}
		git(cloneDir, "checkout", "--quiet", "--detach", strings.TrimSpace(head))
	}
	if err := os.WriteFile(filepath.Join(box, "agent"), []byte(agent+"\n"), 0o644); err != nil {
		fatal(1, "ERROR: "+err.Error())
	}
	remote := "sandbox-" + name
	if _, err := gitOut(dir, "remote", "get-url", remote); err == nil {
		git(dir, "remote", "set-url", remote, cloneDir)
	} else {
		git(dir, "remote", "add", remote, cloneDir)
	}
	fmt.Fprintf(os.Stderr, "Created sandbox %s (agent %s, clone of %s)\n", name, agent, dir)
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
				fatal(2, "ERROR: flag needs an argument: "+a)
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
			fatal(2, "ERROR: unknown flag: "+a)
		}
	}
	if len(args)-i < 2 {
		fatal(2, "ERROR: usage: sbx exec [flags] SANDBOX COMMAND [ARG...]")
	}
	name, argv := args[i], args[i+1:]
	box := filepath.Join(sandboxes, name)
	if _, err := os.Stat(box); err != nil {
		fatal(1, fmt.Sprintf("ERROR: sandbox %q not found", name))
	}
	if dir == "" {
		dir = filepath.Join(box, "clone")
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir, c.Env, c.Stdout, c.Stderr = dir, env, os.Stdout, os.Stderr
	if stdin {
		c.Stdin = os.Stdin
	}
	err := c.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(exitErr.ExitCode())
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		fatal(127, fmt.Sprintf("OCI runtime exec failed: exec: %q: executable file not found in $PATH", argv[0]))
	default:
		fatal(126, "OCI runtime exec failed: "+err.Error())
	}
}

func rm(sandboxes string, args []string) {
	var names []string
	for _, a := range args {
		if a == "--force" || a == "-f" {
			continue
		}
		names = append(names, a)
	}
	if len(names) == 0 {
		fatal(2, "ERROR: usage: sbx rm [--force] SANDBOX...")
	}
	for _, n := range names {
		box := filepath.Join(sandboxes, n)
		if _, err := os.Stat(box); err != nil {
			fatal(1, fmt.Sprintf("ERROR: sandbox %q not found", n))
		}
		if err := os.RemoveAll(box); err != nil {
			fatal(1, "ERROR: "+err.Error())
		}
	}
}

func git(dir string, args ...string) {
	c := exec.Command("git", args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		fatal(1, fmt.Sprintf("ERROR: git %s: %v: %s", strings.Join(args, " "), err, out))
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
