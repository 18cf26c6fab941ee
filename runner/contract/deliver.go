package contract

import (
	"context"
	"strconv"

	"github.com/hookrun/hookrun/workflows"
)

// Collector is a Session that gathers, when it is closed, the work done
// inside it into the run's workspace (sbx: `git fetch` of the sandbox's
// clone onto a workspace branch). The engine asks it after Close.
type Collector interface {
	// Collected names the workspace branch Close put the collected commits
	// on, or says why there is none (collecting failed, Close has not run).
	Collected() (branch string, err error)
}

// Deliverer hands on the commits an agent made in a run's sandbox
// (`sandbox.push`): it pushes the collected branch to the base repository
// with the runner's credentials, after every step has ended and the sandbox
// is gone, and opens a draft pull/merge request when asked. providers/git
// implements it.
type Deliverer interface {
	Deliver(ctx context.Context, req DeliverRequest) (workflows.Delivery, error)
}

// DeliverRequest is one run's collected work.
type DeliverRequest struct {
	RunID     string
	Workflow  *workflows.Workflow // Name and Sandbox.Push
	Event     *workflows.Event    // the base repository (CloneURL) and the pull request
	Workspace string              // host path of the run's workspace
	Branch    string              // the workspace branch the Collector filled
	BaseSHA   string              // the commit the workspace checked out: the agent's commits are those after it
}

// DraftOpener opens draft pull/merge requests. The forge providers that
// can open one implement it.
type DraftOpener interface {
	// OpenDraft opens a draft request to merge Head into Base in the
	// event's repository, or returns the open one for Head when there is
	// one already.
	OpenDraft(ctx context.Context, req DraftRequest) (workflows.ChangeRequest, error)
}

// DraftRequest is a draft pull/merge request to open.
type DraftRequest struct {
	Event *workflows.Event // the repository (Repo, ProjectID)
	Head  string           // branch with the commits, in the event's repository
	Base  string           // branch to merge into, in the event's repository
	Title string
	Body  string
}

// DeliveryBranch is the base repository's branch a run's collected commits
// are pushed to: hookrun/<workflow>/<number>.
func DeliveryBranch(workflow string, number int) string {
	return "hookrun/" + workflow + "/" + strconv.Itoa(number)
}
