package decide

import (
	"context"
	"fmt"
	"strings"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// candidate is one workflow's answer to an event while it is decided.
type candidate struct {
	w       *workflows.Workflow
	cmds    []string // a command trigger's command lines' arguments: one run each
	lines   []string // the lines cmds come from
	runs    bool
	reason  string // why it does not run
	refused bool   // it matched; its authorize policy refused the event
}

// match matches ev against every workflow and returns the run requests of
// those that matched and authorized it, with a skip for each of the others
// (in workflow order). Once anything matched, the author association of
// an event whose payload carries none is looked up first, and the runs of
// a comment are pinned to the pull request's head (or Refused when it is
// unknown). A comment starts runs for at most CommandsConfig.MaxPerComment
// distinct command lines; the others are skipped. Each request carries its
// event's object (decide.go).
func (d *Decider) match(ctx context.Context, ev *workflows.Event) Decision {
	var dec Decision
	d.changedFiles(ctx, ev)
	cands, matched := d.candidates(ev)
	if !matched {
		for _, c := range cands {
			dec.Skipped = append(dec.Skipped, Skip{c.w.Name, c.reason})
		}
		return dec
	}
	var refused string
	if d.authorizeAll(ctx, ev, cands) > 0 {
		refused = d.pinHead(ctx, ev)
	}
	budget := commandBudget{max: d.cfg.Commands.MaxPerComment}
	for _, c := range cands {
		if !c.runs {
			dec.Skipped = append(dec.Skipped, Skip{c.w.Name, c.reason})
			if c.refused {
				dec.Refused = append(dec.Refused, c.w.Name)
			}
			continue
		}
		dec.Runs = d.commandRuns(dec.Runs, c, ev, refused, &budget)
	}
	dec.Skipped = append(dec.Skipped, budget.skipped()...)
	return dec
}

// candidates matches ev against every workflow; matched: any did.
func (d *Decider) candidates(ev *workflows.Event) (cands []candidate, matched bool) {
	for _, w := range d.deps.Workflows.Workflows() {
		m := w.Match(ev)
		cands = append(cands, candidate{w: w, cmds: m.Commands, lines: m.Lines, runs: m.Matched, reason: m.Reason})
		matched = matched || m.Matched
	}
	return cands, matched
}

// authorizeAll applies each matched workflow's `authorize` policy, after
// looking up the author's association when the payload carries none, and
// returns how many authorized ev.
func (d *Decider) authorizeAll(ctx context.Context, ev *workflows.Event, cands []candidate) (authorized int) {
	note := d.associate(ctx, ev)
	for i := range cands {
		c := &cands[i]
		if !c.runs {
			continue
		}
		if ok, reason := authorize(c.w, ev, note); !ok {
			c.runs, c.reason, c.refused = false, reason, true
			continue
		}
		authorized++
	}
	return authorized
}

// authorize applies the workflow's `authorize` policy; a refusal's reason
// ends with note, why the author's association could not be looked up.
func authorize(w *workflows.Workflow, ev *workflows.Event, note string) (bool, string) {
	ok, reason := w.Authorize(ev)
	if !ok && note != "" {
		reason += " (" + note + ")"
	}
	return ok, reason
}

// noCommand is the one run of a match without command lines.
var noCommand = []string{""}

// commandRuns appends to reqs the run requests of an authorized
// candidate: one per command line the budget admits (one in all without
// command lines).
func (d *Decider) commandRuns(reqs []*queue.RunRequest, c candidate, ev *workflows.Event, refused string, budget *commandBudget) []*queue.RunRequest {
	if len(c.cmds) == 0 {
		c.cmds, c.lines = noCommand, noCommand // read only
	}
	for n, args := range c.cmds {
		if c.lines[n] != "" && !budget.admit(c.w.Name, c.lines[n]) {
			continue
		}
		req := d.newRunRequest(c.w, ev, args)
		req.Refused, req.Command = refused, n
		req.Object = objectKey(ev, c.lines[n])
		reqs = append(reqs, req)
	}
	return reqs
}

// changedFiles sets ev.Files when a workflow that may take ev selects by
// changed files (paths or paths_ignore): for a pull request from its
// forge's API, for a push from its payload (or the compare API when the
// payload lists only the first commits). Without the forge's API
// credentials such files are unknown and the trigger matches
// (workflows.ChangedFiles.Unknown). Nothing is looked up for an event no
// such workflow takes.
func (d *Decider) changedFiles(ctx context.Context, ev *workflows.Event) {
	if ev.Kind != workflows.KindPullRequest && ev.Kind != workflows.KindPush || ev.Files != nil ||
		ev.Push != nil && ev.Push.Deleted {
		return
	}
	wanted := false
	for _, w := range d.deps.Workflows.Workflows() {
		wanted = wanted || w.HasPaths(ev.Kind)
	}
	if !wanted {
		return
	}
	lookup := d.deps.Forges.Get(ev.Forge)
	if ev.Kind == workflows.KindPush {
		if paths, complete := lookup.PushFiles(ev.Raw); complete {
			ev.Files = &workflows.ChangedFiles{Paths: paths}
			return
		}
	}
	if lookup.Credentials() != nil {
		ev.Files = &workflows.ChangedFiles{Unknown: fmt.Sprintf("no %s API credentials are configured to list them", ev.Forge)}
		return
	}
	if ev.Push != nil && zeroSHA(ev.Push.Before) {
		// A new branch: nothing to compare with, and the payload lists
		// only its first commits.
		ev.Files = &workflows.ChangedFiles{Truncated: true}
		return
	}
	lctx, cancel := context.WithTimeout(ctx, d.cfg.Files.Timeout)
	defer cancel()
	files, err := lookup.ChangedFiles(lctx, ev)
	if err != nil {
		d.log.Warn("listing the changed files; triggers with paths match", "forge", ev.Forge, "repo", ev.Repo, "delivery", ev.DeliveryID, "err", err)
		ev.Files = &workflows.ChangedFiles{Unknown: "the " + string(ev.Forge) + " API did not list them"}
		return
	}
	ev.Files = &files
}

// zeroSHA reports whether sha is the all-zero object id (SHA-1 or SHA-256)
// forges send as the before of a push that creates a branch.
func zeroSHA(sha string) bool {
	return sha != "" && strings.Trim(sha, "0") == ""
}
