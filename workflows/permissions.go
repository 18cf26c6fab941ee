package workflows

import (
	"path"
	"slices"
)

// What permissions.state names.
const (
	PermitClose  = "close"  // a run may close its issue or pull request
	PermitReopen = "reopen" // a run may reopen it
)

// Permissions is `permissions:`: what a run of the workflow may ask hookrun
// to do on the forge through $HOOKRUN_RESULTS/actions.json. hookrun applies
// what they allow after the run, with its own credentials; the rest is
// refused, with the reason, in the run's report. A workflow without
// permissions may ask for nothing.
type Permissions struct {
	// Labels a run may add or remove: names or path.Match globs (area/*).
	Labels []string `json:"labels,omitempty"`
	// AnyAssignee: a run may assign and unassign anyone (assignees: true).
	AnyAssignee bool `json:"any_assignee,omitempty"`
	// Assignees a run may assign and unassign (assignees: [logins]).
	Assignees []string `json:"assignees,omitempty"`
	// State lists PermitClose and PermitReopen.
	State []string `json:"state,omitempty"`
	// Comment: a run may post a comment of its own.
	Comment bool `json:"comment,omitempty"`
	// Targets: a run may act on other issues and pull requests than its
	// event's (actions.json targets).
	Targets bool `json:"targets,omitempty"`
	// CreateLabels: labels missing on the repository are created; else
	// they are refused.
	CreateLabels bool `json:"create_labels,omitempty"`
}

// AllowsLabel reports whether a run may add or remove the label name.
func (p *Permissions) AllowsLabel(name string) bool {
	if p == nil {
		return false
	}
	for _, g := range p.Labels {
		if ok, err := path.Match(g, name); ok && err == nil || g == name {
			return true
		}
	}
	return false
}

// AllowsAssignee reports whether a run may assign or unassign login.
func (p *Permissions) AllowsAssignee(login string) bool {
	return p != nil && (p.AnyAssignee || slices.Contains(p.Assignees, login))
}

// AllowsState reports whether a run may set the state "closed" or "open".
func (p *Permissions) AllowsState(state string) bool {
	if p == nil {
		return false
	}
	switch state {
	case "closed":
		return slices.Contains(p.State, PermitClose)
	case "open":
		return slices.Contains(p.State, PermitReopen)
	}
	return false
}

// ActionNote is an action in ActionsOutcome: what (as
// contract.PlannedAction words it) and, when refused or failed, why.
type ActionNote struct {
	What   string `json:"what"`
	Reason string `json:"reason,omitempty"`
}

// ActionsOutcome is what became of a run's actions.json: applied, refused
// (with the reason: the permissions, a missing label, no issue to act on)
// and failed (the forge's error). The run's report lists it, its record
// keeps it.
type ActionsOutcome struct {
	Applied []ActionNote `json:"applied,omitempty"`
	Refused []ActionNote `json:"refused,omitempty"`
	Failed  []ActionNote `json:"failed,omitempty"`
}

// Refuse records what as refused for reason.
func (o *ActionsOutcome) Refuse(what, reason string) {
	o.Refused = append(o.Refused, ActionNote{What: what, Reason: reason})
}
