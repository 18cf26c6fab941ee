// Package proc is what the executors that start processes of their own
// share (providers/host, providers/sbx, and providers/docker for the
// environment): how a step's environment becomes NAME=value strings, and how
// a process group is stopped (SIGTERM to the group, SIGKILL after the grace
// period, nothing left behind). It sits below those providers, beside
// providers/internal/render and sticky, and imports only workflows and the
// standard library.
package proc

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/hookrun/hookrun/workflows"
)

// Env flattens env lists into NAME=value strings, as exec.Cmd.Env and the
// Docker API take them: a later entry replaces an earlier one of the same
// name in place. The result is never nil: a nil exec.Cmd.Env would inherit
// this process's environment.
func Env(lists ...[]workflows.EnvVar) []string { return Merge(nil, lists...) }

// Merge is Env over base, NAME=value strings as os.Environ returns them:
// the lists' entries replace base's of the same name in place, new names
// follow.
func Merge(base []string, lists ...[]workflows.EnvVar) []string {
	n := len(base)
	for _, l := range lists {
		n += len(l)
	}
	idx := make(map[string]int, n)
	out := make([]string, 0, n)
	set := func(name, kv string) {
		if i, ok := idx[name]; ok {
			out[i] = kv
			return
		}
		idx[name] = len(out)
		out = append(out, kv)
	}
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		set(name, kv)
	}
	for _, l := range lists {
		for _, e := range l {
			set(e.Name, e.Name+"="+e.Value)
		}
	}
	return out
}

// Signal sends sig to every process of the group pgid; a group that is
// gone already is not an error.
func Signal(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig) // ESRCH: nothing left to stop
}

// Stop ends a started process that leads its own group (Setpgid): SIGTERM
// to the group, SIGKILL after grace, and returns once the process has
// exited, with what exited delivered (cmd.Wait's result). ready, when not
// nil, holds SIGTERM back until it is closed (an init that installs its
// signal handlers first), within the same grace.
func Stop(pgid int, grace time.Duration, exited <-chan error, ready <-chan struct{}) error {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	if ready != nil {
		select {
		case <-ready:
		case err := <-exited:
			return err
		case <-timer.C:
			Signal(pgid, syscall.SIGKILL)
			return <-exited
		}
	}
	Signal(pgid, syscall.SIGTERM)
	select {
	case err := <-exited:
		return err
	case <-timer.C:
		Signal(pgid, syscall.SIGKILL)
		return <-exited
	}
}

// StopLeftovers stops every process still in the group once its leader
// has exited: SIGTERM (unless it was sent at termAt already), then SIGKILL
// if any survives grace after it, and returns when they are gone (bounded
// by killWait).
func StopLeftovers(pgid int, termAt time.Time, grace time.Duration) {
	if !Alive(pgid) {
		return
	}
	if termAt.IsZero() {
		Signal(pgid, syscall.SIGTERM)
		termAt = time.Now()
	}
	deadline := termAt.Add(grace)
	for time.Now().Before(deadline) {
		if !Alive(pgid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	Signal(pgid, syscall.SIGKILL)
	// SIGKILL takes effect asynchronously (a loaded machine shows it); a
	// step is promised gone when its executor returns, so wait, boundedly.
	for end := time.Now().Add(killWait); Alive(pgid) && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
}

// killWait bounds how long StopLeftovers waits for SIGKILLed processes to
// die (a process in uninterruptible sleep cannot die until its I/O
// completes).
const killWait = 2 * time.Second

// Alive reports whether a process of the group exists that is not a
// zombie (an exited orphan waiting for its reaper counts as gone).
func Alive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // no procfs: trust kill(2)
	}
	want := fmt.Sprint(pgid)
	for _, ent := range entries {
		if ent.Name()[0] < '0' || ent.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + ent.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 3 && f[2] == want && f[0] != "Z" {
			return true
		}
	}
	return false
}

// OrDiscard is w, or io.Discard for a request that gives no writer.
func OrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
