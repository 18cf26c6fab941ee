package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `hookrun run` of a `checkout: true` workflow works in a fresh clone of
// the payload's repository at the payload's head SHA, not in the current
// directory and not at the tip the pull request's ref has moved on to; the
// event file is readable and never shows in the checkout's `git status`.
func TestRunChecksOutThePayloadsHead(t *testing.T) {
	up := newGitUpstream(t)
	head, _ := up.branch(2, "pr-first", "pr-second")
	up.push(2, up.git(up.work, "rev-parse", "pr-2")) // the ref moved on after the event
	payload := patchPayload(t, "github/pull_request/opened.payload.json", "file://"+up.bare, func(m map[string]any) {
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = head
	})
	dir, cache := t.TempDir(), t.TempDir()
	ev := writeFile(t, filepath.Join(dir, "event.json"), string(payload))
	wf := writeFile(t, filepath.Join(dir, "wf.yaml"), `checkout: true
steps:
  - id: show
    run: |
      set -e
      echo "head $(git rev-parse HEAD) version $(cat version.txt) in $PWD"
      grep -q '"clone_url"' "$HOOKRUN_EVENT_PATH"
      test "$HOOKRUN_HEAD_SHA" = "$(git rev-parse HEAD)"
      git status --porcelain
      git add -A
      git diff --cached --name-only
`)
	code, out, errs := runCLI(t, "run", wf, "--event", ev, "--event-name", "pull_request", "--cache", cache)
	if code != 0 {
		t.Fatalf("code %d\nstdout %s\nstderr %s", code, out, errs)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[show] ") {
			if line != "" {
				t.Errorf("more output than the head line: %q (git status or git add -A saw a file)", l)
			}
			line = l
		}
	}
	if want := "[show] head " + head + " version pr-first in " + filepath.Join(cache, "workspaces") + "/"; !strings.HasPrefix(line, want) {
		t.Errorf("step printed %q, want %q...", line, want)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "workspaces", "*", "*")); len(left) != 0 {
		t.Errorf("the checkout was left behind: %v", left)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the current directory changed: %v", entries)
	}

	// Without a payload there is nothing to check out.
	if code, _, errs := runCLI(t, "run", wf, "--cache", cache); code != exitUsage || !strings.Contains(errs, "checkout: true") {
		t.Errorf("without --event: code %d, stderr %q; want a usage error naming checkout: true", code, errs)
	}
}
