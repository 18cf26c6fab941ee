package ingress

import (
	"net/http"
	"strings"
	"testing"
)

const pushWorkflow = `name: push-lint
on:
  - event: push
    branches: [main]
steps:
  - id: lint
    run: make lint
`

const mrWorkflow = `name: mr-check
on:
  - event: pull_request
steps:
  - id: check
    run: make check
`

// TestDriftedFields: a payload whose fields changed JSON type is accepted
// without runs when no workflow takes its kind of event, and refused with
// 400 naming the field when one does; a body that is not JSON stays a 400;
// nothing is persisted in either case.
func TestDriftedFields(t *testing.T) {
	pushAfter := patchJSON(t, githubFixtures+"push/payload.json", func(m map[string]any) { m["after"] = 123 })
	mrDescription := patchJSON(t, gitlabFixtures+"merge_request.json", func(m map[string]any) {
		obj(m, "object_attributes")["description"] = map[string]any{"changed": "type"}
	})

	t.Run("github push nobody takes", func(t *testing.T) {
		env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow})
		a := env.github(t, "push", "drift-1", pushAfter)
		if a.Code != http.StatusAccepted || len(a.Runs) != 0 || !strings.Contains(a.Raw, `"field":"after"`) {
			t.Fatalf("answer %d %s: want 202 without runs naming the drifted field", a.Code, a.Raw)
		}
		if ids := streamRunIDs(t, env.q); len(ids) != 0 {
			t.Fatalf("stream holds %v", ids)
		}
	})
	t.Run("github push a workflow takes", func(t *testing.T) {
		env := newEnv(t, Config{}, map[string]string{"push.yaml": pushWorkflow, "pr.yaml": prWorkflow})
		a := env.github(t, "push", "drift-2", pushAfter)
		if a.Code != http.StatusBadRequest || !strings.Contains(a.Error, "field after has an unexpected type") || !strings.Contains(a.Error, "push-lint") {
			t.Fatalf("answer %d %s: want 400 naming the field and the workflow", a.Code, a.Raw)
		}
		if ids := streamRunIDs(t, env.q); len(ids) != 0 {
			t.Fatalf("stream holds %v", ids)
		}
	})
	t.Run("gitlab merge request nobody takes", func(t *testing.T) {
		env := newEnv(t, Config{}, map[string]string{"push.yaml": pushWorkflow})
		a := env.gitlab(t, "Merge Request Hook", nil, mrDescription)
		if a.Code != http.StatusAccepted || len(a.Runs) != 0 || !strings.Contains(a.Raw, `"field":"object_attributes.description"`) {
			t.Fatalf("answer %d %s: want 202 naming object_attributes.description", a.Code, a.Raw)
		}
	})
	t.Run("gitlab merge request a workflow takes", func(t *testing.T) {
		env := newEnv(t, Config{}, map[string]string{"mr.yaml": mrWorkflow})
		a := env.gitlab(t, "Merge Request Hook", nil, mrDescription)
		if a.Code != http.StatusBadRequest || !strings.Contains(a.Error, "object_attributes.description") {
			t.Fatalf("answer %d %s: want 400 naming the field", a.Code, a.Raw)
		}
	})
	t.Run("not json", func(t *testing.T) {
		env := newEnv(t, Config{}, map[string]string{"pr.yaml": prWorkflow})
		if a := env.github(t, "push", "drift-3", []byte(`{"ref": "refs/heads/main", "after": `)); a.Code != http.StatusBadRequest {
			t.Fatalf("truncated body answered %d %s", a.Code, a.Raw)
		}
	})
	t.Run("undrifted still runs", func(t *testing.T) {
		env := newEnv(t, Config{}, map[string]string{"mr.yaml": mrWorkflow})
		a := env.gitlab(t, "Merge Request Hook", nil, patchJSON(t, gitlabFixtures+"merge_request.json", func(map[string]any) {}))
		if a.Code != http.StatusAccepted || strings.Contains(a.Raw, "drift") {
			t.Fatalf("answer %d %s", a.Code, a.Raw)
		}
	})
}
