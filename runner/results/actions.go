package results

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hookrun/hookrun/runner/contract"
)

// ActionsFile is the name of the actions file at the top of the results
// folder.
const ActionsFile = "actions.json"

// decodeActions decodes actions.json strictly: unknown keys, a second
// value, or a state or state_reason outside their sets are errors.
func decodeActions(file string, data []byte) (*contract.Actions, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, positioned(file, data, 1, errEmpty)
	}
	var raw json.RawMessage // syntax first: json.Unmarshal places its errors exactly, trailing data included
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, positioned(file, data, 1, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var a contract.Actions
	if err := dec.Decode(&a); err != nil {
		return nil, positioned(file, data, 1, err)
	}
	check := func(s *contract.ActionSet, where string) error {
		key, msg := "", ""
		switch {
		case s.State != "" && s.State != "open" && s.State != "closed":
			key, msg = "state", fmt.Sprintf("%sstate %q: want open or closed", where, s.State)
		case s.Reason != "" && s.Reason != "completed" && s.Reason != "not_planned" && s.Reason != "duplicate":
			key, msg = "state_reason", fmt.Sprintf("%sstate_reason %q: want completed, not_planned or duplicate", where, s.Reason)
		default:
			return nil
		}
		pe := &PositionError{File: file, Msg: msg}
		if off := keyOffset(data, key); off >= 0 {
			pe.Line, pe.Col = lineCol(data, off)
		}
		return pe
	}
	if err := check(&a.ActionSet, ""); err != nil {
		return nil, err
	}
	for i := range a.Targets {
		t := &a.Targets[i]
		if t.Number <= 0 {
			pe := &PositionError{File: file, Msg: fmt.Sprintf("targets[%d]: number must be a positive issue or pull request number", i)}
			if off := keyOffset(data, "targets"); off >= 0 {
				pe.Line, pe.Col = lineCol(data, off)
			}
			return nil, pe
		}
		if err := check(&t.ActionSet, fmt.Sprintf("targets[%d]: ", i)); err != nil {
			return nil, err
		}
	}
	return &a, nil
}
