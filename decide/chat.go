package decide

import (
	"fmt"

	"github.com/hookrun/hookrun/workflows"
)

// Chat decides what a chat command runs: for each workflow whose chat
// trigger takes it, the run's event acts on that trigger's repository
// (cloned from its chat origin), which must be in allow_repos, and the
// workflow's chat allowlists must let the user and channel through.
// Workflows that do not listen to chat commands are not listed as skipped.
func (d *Decider) Chat(ev *workflows.Event) Decision {
	var dec Decision
	for _, w := range d.deps.Workflows.Workflows() {
		if !w.Listens(workflows.KindChat) {
			continue
		}
		m := w.Match(ev)
		if !m.Matched {
			dec.Skipped = append(dec.Skipped, Skip{w.Name, m.Reason})
			continue
		}
		forge, repo := w.On[m.Trigger].ChatTarget()
		origin, ok := d.chatOrigin(forge)
		if !ok {
			dec.Skipped = append(dec.Skipped, Skip{w.Name, fmt.Sprintf("no origin is configured for forge %q", forge)})
			continue
		}
		if !d.Allowed(repo) {
			dec.Skipped = append(dec.Skipped, Skip{w.Name, fmt.Sprintf("repository %s is not in the server's allow_repos", repo)})
			continue
		}
		if ok, reason := authorize(w, ev, ""); !ok {
			dec.Skipped = append(dec.Skipped, Skip{w.Name, reason})
			continue
		}
		req := d.newRunRequest(w, ev, m.CommandArgs)
		req.Event.Forge, req.Event.Repo = forge, repo
		req.Event.CloneURL = cloneURL(origin, repo)
		dec.Runs = append(dec.Runs, req)
	}
	return dec
}

// chatOrigin is where a chat run's repository on forge is cloned from:
// Config.ChatOrigins' entry, else the forge's own GitOrigin; false when
// neither knows one.
func (d *Decider) chatOrigin(forge workflows.Forge) (string, bool) {
	if o, ok := d.cfg.ChatOrigins[forge]; ok {
		return o, true
	}
	o, err := d.deps.Forges.Get(forge).GitOrigin()
	return o, err == nil && o != ""
}
