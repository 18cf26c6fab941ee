package main

import (
	"fmt"

	"github.com/hookrun/hookrun/workflows"
)

// admitRepos is the runner's check of allow_repos, defense in depth behind
// ingress: a run for another repository (published by an older ingress, or
// by anything else with access to the stream) fails before its checkout.
// nil when allow_repos is unset, which `hookrun runner` allows.
func admitRepos(patterns []string) func(*workflows.Event) error {
	if len(patterns) == 0 {
		return nil
	}
	return func(e *workflows.Event) error {
		if workflows.AnyRepo(patterns, e.Repo) {
			return nil
		}
		return fmt.Errorf("repository %q is not in allow_repos", e.Repo)
	}
}
