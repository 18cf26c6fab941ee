package forge

import (
	"fmt"

	"github.com/hookrun/hookrun/workflows"
)

// OpenDraft is the outline of every forge's draft opening: create opens
// the draft (and answers the HTTP status of a failure, 0 without one);
// when the forge refuses it with conflict, because one is open for the
// same head already (an earlier run pushed the same branch), existing
// lists the open ones for that head, the first of which is the answer.
// T is the forge's pull or merge request, cr what hookrun keeps of it.
// what names the draft in errors ("draft pull request head → base in
// repo").
func OpenDraft[T any](what string, conflict int, cr func(T) workflows.ChangeRequest,
	create func() (T, int, error), existing func() ([]T, error)) (workflows.ChangeRequest, error) {
	made, status, err := create()
	if err == nil {
		return cr(made), nil
	}
	if status != conflict {
		return workflows.ChangeRequest{}, fmt.Errorf("opening %s: %w", what, err)
	}
	open, lerr := existing()
	if lerr != nil || len(open) == 0 {
		return workflows.ChangeRequest{}, fmt.Errorf("opening %s: %w", what, err)
	}
	return cr(open[0]), nil
}
