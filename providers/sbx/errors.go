package sbx

import (
	"errors"
	"strings"
)

// Known sbx failures. Errors returned by this package wrap one of them when
// sbx printed the matching text; each says how to fix it.
var (
	ErrNotSignedIn          = errors.New(`sbx is not signed in to Docker: run "sbx login" as the user the runner runs as`)
	ErrNotLoggedIn          = errors.New(`sbx is not logged in to the registry: run "sbx login" (and "docker login" for private images) as the user the runner runs as`)
	ErrPolicyNotInitialized = errors.New(`the global network policy of sbx is not initialized: run "sbx policy init" once as the user the runner runs as (older sbx: "sbx policy set-default balanced")`)
	ErrSandboxExists        = errors.New(`the sandbox already exists: remove it with "sbx rm --force NAME"`)
	ErrSandboxNotFound      = errors.New(`the sandbox does not exist (removed, or never created)`)
)

// patterns maps lower-case fragments of sbx's messages to the errors above,
// most specific first.
var patterns = []struct {
	fragments []string // any of them
	err       error
}{
	{[]string{"no valid user session", "please sign in", "not signed in", "sign in to docker"}, ErrNotSignedIn},
	{[]string{"not logged in", "user is not authenticated", "docker login"}, ErrNotLoggedIn},
	{[]string{"policy is not initialized", "policy not initialized", "no default network policy", "default policy is not set", "sbx policy init", "sbx policy set-default"}, ErrPolicyNotInitialized},
	{[]string{"already exists"}, ErrSandboxExists},
	{[]string{"not found", "no such sandbox", "does not exist"}, ErrSandboxNotFound},
}

// classify returns the known error sbx's output describes, or nil. Every
// line counts: sbx prints some failures with an "ERROR:" prefix and some
// (the expired session) without.
func classify(out string) error {
	for _, line := range strings.Split(out, "\n") {
		if err := match(strings.ToLower(line)); err != nil {
			return err
		}
	}
	return nil
}

func match(l string) error {
	for _, p := range patterns {
		for _, f := range p.fragments {
			if strings.Contains(l, f) {
				return p.err
			}
		}
	}
	return nil
}

// classifyExec is classify for `sbx exec`, whose stderr is mostly the
// step's own: only the last line counts, it must be of sbx's "ERROR: ..."
// form (or sbx's session message), and "not found" must name the sandbox.
func classifyExec(stderr, sandbox string) error {
	last := strings.ToLower(lastLine(stderr))
	if !strings.HasPrefix(last, "error:") && !strings.Contains(last, "no valid user session") {
		return nil
	}
	err := match(last)
	if errors.Is(err, ErrSandboxNotFound) && !strings.Contains(last, strings.ToLower(sandbox)) {
		return nil
	}
	return err
}
