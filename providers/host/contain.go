package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hookrun/hookrun/providers/host/stepinit"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// This file keeps the processes of commands that run as this process's own
// user (no Isolation) from outliving it, as far as the platform allows:
//
//   - Config.Contain: each command starts through the init (package
//     stepinit, in its SameUser mode) as PID 1 of a PID namespace of its
//     own, inside a user namespace that maps this process's uid and gid to
//     themselves when it is not root. The init dies with this process
//     (Pdeathsig, SIGKILL included), and the kernel then kills every
//     process of the namespace, those that called setsid too. It has IPC
//     and UTS namespaces of its own as well: the SysV IPC objects and
//     POSIX message queues it makes end with it, and a step (as root) that
//     changes the host name changes only its own; the name stays the
//     host's, and /dev/shm and /dev/mqueue are the host's (no mount
//     namespace here).
//   - Config.LeftoversDir, without Contain (no namespaces to be had): the
//     command gets Pdeathsig SIGKILL (its children do not inherit it), and
//     while it runs its process group is recorded in that directory (group
//     id and the leader's start time); ReapLeftovers, at the next start,
//     kills what is left of the groups a dead process recorded. A process
//     that left its group (setsid) escapes both.

// containedCommand builds the init that runs spec as this process's user
// in PID, IPC and UTS namespaces of its own (see Config.Contain).
func containedCommand(initPath string, spec stepinit.Spec) (cmd *exec.Cmd, errR *os.File, cleanup func(), err error) {
	spec.SameUser = true
	sys := &syscall.SysProcAttr{
		Setpgid:    true,
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
		// This process dying (kill -9 included) kills the init, and with
		// it, as PID 1 of its namespace, every process of the command.
		Pdeathsig: syscall.SIGKILL,
	}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		// Without root a PID namespace needs a user namespace; mapping the
		// user to itself keeps files, HOME and the command's uid as they are.
		sys.Cloneflags |= syscall.CLONE_NEWUSER
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		sys.GidMappingsEnableSetgroups = false
	}
	return initProcess(initPath, spec, sys)
}

// initProcess builds the process of an init that reads spec on fd 3 and
// reports on fd 4 (package stepinit), with the given attributes.
func initProcess(initPath string, spec stepinit.Spec, sys *syscall.SysProcAttr) (cmd *exec.Cmd, errR *os.File, cleanup func(), err error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating init pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(specR, specW)
		return nil, nil, nil, fmt.Errorf("creating init pipe: %w", err)
	}
	data, err := spec.MarshalBinary()
	if err != nil {
		closeAll(specR, specW, errR, errW)
		return nil, nil, nil, fmt.Errorf("encoding init spec: %w", err)
	}
	// Written in the background: a spec larger than the pipe buffer would
	// otherwise block until the init reads it.
	go func() {
		_, _ = specW.Write(data)
		_ = specW.Close()
	}()
	cmd = &exec.Cmd{
		Path:        initPath,
		Args:        []string{stepinit.Name},
		Env:         []string{}, // the init needs nothing; the command's env travels in the spec
		ExtraFiles:  []*os.File{specR, errW},
		SysProcAttr: sys,
	}
	return cmd, errR, func() { closeAll(specR, errW) }, nil
}

// ProbeContain runs one trivial command contained (Config.Contain) and
// reports why it could not be: no PID namespace for this user (a kernel or
// container profile that forbids unprivileged user namespaces).
func ProbeContain(ctx context.Context, initBinary string) error {
	return probe(ctx, Config{Contain: true, InitBinary: initBinary}, "containment-probe", "containment", "")
}

// probe runs `sh -c "exit 0"` as step stepID under cfg: an error saying
// why it could not ("probing host step <what>: ..."; as, when not "",
// names whom it ran as).
func probe(ctx context.Context, cfg Config, stepID, what, as string) error {
	var out bytes.Buffer
	res, err := New(cfg).Exec(ctx, contract.ExecRequest{
		StepID: stepID,
		Argv:   []string{"sh", "-c", "exit 0"},
		Env:    []workflows.EnvVar{{Name: "PATH", Value: "/usr/local/bin:/usr/bin:/bin"}},
		Dir:    "/",
		Stdout: &out,
		Stderr: &out,
	})
	switch {
	case err != nil:
		return fmt.Errorf("probing host step %s: %w", what, err)
	case res.ExitCode != 0:
		return fmt.Errorf("probing host step %s: `sh -c \"exit 0\"`%s exited %d: %s", what, as, res.ExitCode, strings.TrimSpace(out.String()))
	}
	return nil
}

// recordGroup records the process group pgid (its leader's start time
// with it) in dir while a command runs; the returned func removes the
// record. A record that cannot be written is not fatal: the command runs,
// only unrecorded.
func recordGroup(dir string, pgid int) (remove func(), err error) {
	start, err := startTime(pgid)
	if err != nil {
		return func() {}, fmt.Errorf("recording process group %d: %w", pgid, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return func() {}, fmt.Errorf("recording process group %d: %w", pgid, err)
	}
	self, err := startTime(os.Getpid())
	if err != nil {
		return func() {}, fmt.Errorf("recording process group %d: %w", pgid, err)
	}
	p := filepath.Join(dir, fmt.Sprintf("%d.%d", os.Getpid(), pgid))
	if err := os.WriteFile(p, fmt.Appendf(nil, "%d %d %d\n", pgid, start, self), 0o600); err != nil {
		return func() {}, fmt.Errorf("recording process group %d: %w", pgid, err)
	}
	return func() { _ = os.Remove(p) }, nil
}

// ReapLeftovers kills what is left of the process groups recorded in dir
// (Config.LeftoversDir) by processes that are gone, a runner killed in the
// middle of a step, and removes their records. A group counts as the
// recorded one while its leader lives with the recorded start time; with
// the leader gone, its members that started after the leader (a group id
// is reused only once the old group is empty). Records of a live process
// (the same pid with the same start time: another runner on this data
// dir) are left alone. It returns how many groups it stopped.
func ReapLeftovers(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reaping leftover host steps: %w", err)
	}
	reaped := 0
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var pgid int
		var start, ownerStart uint64
		_, err = fmt.Sscan(string(b), &pgid, &start, &ownerStart)
		owner, _, _ := strings.Cut(e.Name(), ".")
		if pid, perr := strconv.Atoi(owner); err == nil && perr == nil && pid != os.Getpid() {
			if st, serr := readStat(pid); serr == nil && st.state != "Z" && st.start == ownerStart {
				continue // a live runner's step (another process with the same data dir)
			}
		}
		if err == nil && pgid > 1 {
			if killGroup(pgid, start) {
				reaped++
			}
		}
		_ = os.Remove(p)
	}
	return reaped, nil
}

// killGroup SIGKILLs the processes of group pgid that belong to the group
// recorded with its leader's start time, and waits (boundedly) until they
// are gone; it reports whether there were any.
func killGroup(pgid int, start uint64) bool {
	found := false
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		pids := groupMembers(pgid, start)
		if len(pids) == 0 {
			return found
		}
		found = true
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return found
}

// groupMembers lists the live processes of group pgid that started no
// earlier than start (the recorded leader's start time); none when the
// leader lives with another start time (a reused id).
func groupMembers(pgid int, start uint64) []int {
	if st, err := readStat(pgid); err == nil && st.start != start && st.pgrp == pgid {
		return nil
	}
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgrp != pgid || st.state == "Z" || st.start < start {
			continue
		}
		out = append(out, pid)
	}
	return out
}

type procStat struct {
	state string
	pgrp  int
	start uint64 // clock ticks after boot
}

// readStat reads the fields of /proc/PID/stat that ReapLeftovers needs.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime ...; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("reading /proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("reading /proc/%d/stat: malformed", pid)
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("reading /proc/%d/stat: malformed", pid)
	}
	return procStat{state: f[0], pgrp: pgrp, start: start}, nil
}

func startTime(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.start, err
}
