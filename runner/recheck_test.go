package runner_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner"
	"github.com/hookrun/hookrun/workflows"
)

// deployOwnerOnly is a `/deploy` workflow only an OWNER may start; its step
// leaves a marker named after the run.
const deployOwnerOnly = `name: deploy
on:
  - event: comment
    command: /deploy
authorize:
  author_association: [OWNER]
steps:
  - id: go
    run: touch "$TMP/ran-$HOOKRUN_RUN_ID"
`

// apiOnly has no trigger: it runs only when started through the API.
const apiOnly = `name: manual
steps:
  - id: go
    run: touch "$TMP/ran-$HOOKRUN_RUN_ID"
`

// pathsOnly runs for pull requests that change docs/; the run does not
// carry the list of files.
const pathsOnly = `name: docs
on:
  - event: pull_request
    paths: ["docs/**"]
authorize:
  author_association: []
steps:
  - id: go
    run: touch "$TMP/ran-$HOOKRUN_RUN_ID"
`

// comment makes req a /deploy comment on a pull request by sender.
func comment(sender, assoc, body, args string) func(*queue.RunRequest) {
	return func(req *queue.RunRequest) {
		ev := &req.Event
		ev.Kind, ev.Action, ev.Sender, ev.AuthorAssociation = workflows.KindComment, "created", sender, assoc
		ev.Comment = &workflows.Comment{ID: 99, Body: body}
		ev.CommandArgs = args
	}
}

// The runner decides again what ingress decided: an authenticated request
// whose event the workflow's trigger or authorize refuses fails with the
// reason, before any workspace or step (no marker); the kinds of request
// ingress makes without a trigger or a sender (API starts, re-runs) run, as
// does a paths trigger, whose file list the run does not carry.
func TestRunnerRechecksTriggerAndAuthorize(t *testing.T) {
	t.Parallel()
	f := newFixture(t, map[string]string{"deploy": deployOwnerOnly, "manual": apiOnly, "docs": pathsOnly}, nil,
		func(c *runner.Config) { c.Recheck = nil }) // the default: CheckRequest
	f.start()
	ran := func(id string) bool {
		_, err := os.Stat(filepath.Join(f.tmp, "ran-"+id))
		return err == nil
	}
	refused := []struct {
		name, workflow string
		mod            func(*queue.RunRequest)
		want           string
	}{
		{"NONE author", "deploy", comment("mallory", "NONE", "/deploy staging", "staging"), `author association NONE of "mallory" not in [OWNER]`},
		{"no association", "deploy", comment("mallory", "", "/deploy staging", "staging"), `author association NONE of "mallory" not in [OWNER]`},
		{"no trigger for the event", "deploy", nil, `no trigger for event "pull_request"`},
		{"not the command", "deploy", comment("octo", "OWNER", "please deploy", ""), "no line of the comment is the command /deploy"},
		{"arguments not in the comment", "deploy", comment("octo", "OWNER", "/deploy staging", "production"), `command arguments "production" are not a command of the event`},
		{"API workflow with an event", "manual", nil, "workflow has no triggers"},
	}
	var ids []string
	for _, c := range refused {
		ids = append(ids, f.publish(c.workflow, c.mod))
	}
	ok := []struct {
		name, workflow string
		mod            func(*queue.RunRequest)
	}{
		{"OWNER", "deploy", comment("octo", "OWNER", "/deploy staging", "staging")},
		{"API start", "manual", func(req *queue.RunRequest) {
			req.Event = workflows.Event{Forge: workflows.Forge("github"), Repo: "octo/demo"}
		}},
		{"re-run", "deploy", func(req *queue.RunRequest) {
			comment("mallory", "NONE", "/deploy staging", "staging")(req)
			req.RerunOf, req.Attempt = "01JZZZZZZZZZZZZZZZZZZZZZZZ", 2
		}},
		{"paths", "docs", func(req *queue.RunRequest) {
			req.Event.Files = &workflows.ChangedFiles{Paths: []string{"docs/a.md"}}
		}},
	}
	var okIDs []string
	for _, c := range ok {
		okIDs = append(okIDs, f.publish(c.workflow, c.mod))
	}
	for i, c := range refused {
		rec := f.waitRecord(ids[i], 15*time.Second, "failed", terminal)
		if rec.Status != workflows.StatusFailed || !strings.Contains(rec.Error, "refusing run") || !strings.Contains(rec.Error, c.want) {
			t.Errorf("%s: run %s, error %q; want failed naming %q", c.name, rec.Status, rec.Error, c.want)
		}
		if len(rec.Steps) != 0 || ran(ids[i]) {
			t.Errorf("%s: a step ran (%d step states, marker %v)", c.name, len(rec.Steps), ran(ids[i]))
		}
		f.ws.mu.Lock()
		prepared := slices.Contains(f.ws.prepared, ids[i])
		f.ws.mu.Unlock()
		if prepared {
			t.Errorf("%s: a workspace was prepared", c.name)
		}
	}
	for i, c := range ok {
		rec := f.waitRecord(okIDs[i], 15*time.Second, "finished", terminal)
		if rec.Status != workflows.StatusSucceeded || !ran(okIDs[i]) {
			t.Errorf("%s: run %s (%q), marker %v; want it to run", c.name, rec.Status, rec.Error, ran(okIDs[i]))
		}
	}
}
