package runner

import (
	"fmt"
	"slices"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// CheckRequest decides again, against the event the run request carries, what
// ingress decided before it queued the run: that the event matches one of
// the workflow's triggers and that the workflow's `authorize` policy lets
// its sender through (allow_repos is Config.Admit's). It calls the very
// functions ingress calls (workflows.Workflow.Match and Authorize), so each
// rule lives in one place. The queue authenticated the request already
// (queue/reqauth.go): this is the second line, against a request ingress
// should not have made (a bug, a runner whose policy is stricter than an
// ingress's, a leaked key) — a refusal fails the run with the reason.
//
// What each kind of request allows:
//   - an event without a kind: a run started through the API (POST
//     /api/v1/workflows/{name}/runs) or a re-run of one; it has no sender
//     and no trigger, and the API's bearer token authorized it: nothing to
//     re-check (a workflow without `on:` runs only this way);
//   - a re-run (RerunOf: the API's rerun, a /retry comment): ingress runs
//     the workflow loaded now on the earlier run's event, whose triggers may
//     have changed since, authorized by the API token or by the workflow's
//     authorize for the /retry commenter, who is not in the request: not
//     re-checked either;
//   - every other request (a webhook delivery, a replay, a Slack command):
//     the event must match a trigger, a command's arguments must be one of
//     the commands the comment holds for the workflow, a Slack command's
//     repository must be its trigger's, and authorize must allow the
//     sender.
//
// Two inputs of matching are ingress's alone and are left out: the list of
// changed files (a run carries only whether it was complete, so `paths`
// filters are not re-checked) and the command arguments ingress fills in
// after matching (cleared, as they were when ingress matched).
//
// It is Config.Recheck's default.
func CheckRequest(wf *workflows.Workflow, req *queue.RunRequest) error {
	if req.Event.Kind == "" || req.RerunOf != "" {
		return nil
	}
	ev := req.Event
	ev.Files, ev.CommandArgs = nil, ""
	m := wf.Match(&ev)
	if !m.Matched {
		return fmt.Errorf("the event does not match a trigger of workflow %s: %s", wf.Name, m.Reason)
	}
	if m.Commands != nil && !slices.Contains(m.Commands, req.Event.CommandArgs) {
		return fmt.Errorf("the run's command arguments %q are not a command of the event for workflow %s", req.Event.CommandArgs, wf.Name)
	}
	if ev.Kind == workflows.KindChat {
		if forge, repo := wf.On[m.Trigger].ChatTarget(); forge != ev.Forge || repo != ev.Repo {
			return fmt.Errorf("the chat command's run acts on %s %s, not on its trigger's %s %s", ev.Forge, ev.Repo, forge, repo)
		}
	}
	if ok, reason := wf.Authorize(&ev); !ok {
		return fmt.Errorf("workflow %s does not authorize the event: %s", wf.Name, reason)
	}
	return nil
}
