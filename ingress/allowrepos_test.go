package ingress

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/stores/storestest"
)

// TestAllowRepos: with allow_repos set, a delivery for a repository outside
// it is answered 202 "ignored" and leaves no message, delivery key or run
// record in JetStream (only its summary, TestDeliveriesUnmatched), while allowed repositories (matched
// case-insensitively, GitLab subgroups through **) run as before.
func TestAllowRepos(t *testing.T) {
	// Anyone may trigger it: only allow_repos stands in the way.
	const anyone = prWorkflow + "authorize: { author_association: [] }\n"
	env := newEnv(t, Config{AllowRepos: []string{"codertocat/*", "mygroup/**"}}, map[string]string{"pr.yaml": anyone})

	github := func(fullName string) []byte {
		return patchJSON(t, githubFixtures+"pull_request/opened.payload.json", func(m map[string]any) {
			obj(m, "repository")["full_name"] = fullName
		})
	}
	gitlab := func(path string) []byte {
		return patchJSON(t, gitlabFixtures+"merge_request.json", func(m map[string]any) {
			obj(m, "project")["path_with_namespace"] = path
		})
	}
	gitlabPost := func(delivery string, body []byte) answer {
		h := http.Header{}
		h.Set("X-Gitlab-Event-UUID", delivery)
		return env.gitlab(t, "Merge Request Hook", h, body)
	}

	var allowedRuns []string
	for _, a := range []answer{
		env.github(t, "pull_request", "gh-allowed", github("Codertocat/Hello-World")),
		gitlabPost("gl-allowed", gitlab("MyGroup/sub/team/project")),
	} {
		if a.Code != http.StatusAccepted || len(a.Runs) != 1 || strings.Contains(a.Raw, "ignored") {
			t.Fatalf("allowed repository: %d %s\n%s", a.Code, a.Raw, env.logs)
		}
		allowedRuns = append(allowedRuns, a.Runs[0].ID)
	}

	for _, tc := range []struct {
		name, delivery string
		post           func() answer
	}{
		{"github: another owner", "gh-other", func() answer {
			return env.github(t, "pull_request", "gh-other", github("Codertocat-evil/Hello-World"))
		}},
		{"github: a prefix of an allowed owner", "gh-prefix", func() answer {
			return env.github(t, "pull_request", "gh-prefix", github("Codertocatx/Hello-World"))
		}},
		{"gitlab: the allowed group nested elsewhere", "gl-nested", func() answer {
			return gitlabPost("gl-nested", gitlab("evil/mygroup/project"))
		}},
		{"gitlab: a subgroup under * (codertocat/* is one level)", "gl-deep", func() answer {
			return gitlabPost("gl-deep", gitlab("codertocat/sub/project"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.post()
			var got map[string]any
			if err := json.Unmarshal([]byte(a.Raw), &got); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"delivery": tc.delivery, "runs": []any{}, "ignored": "repository not allowed"}
			if a.Code != http.StatusAccepted || !jsonEqual(got, want) {
				t.Fatalf("not allowed: %d %s, want 202 %v", a.Code, a.Raw, want)
			}
		})
	}

	// Only the allowed deliveries reached JetStream.
	ids := streamRunIDs(t, env.q)
	slices.Sort(ids)
	slices.Sort(allowedRuns)
	if !slices.Equal(ids, allowedRuns) {
		t.Errorf("stream holds runs %v, want only the allowed %v", ids, allowedRuns)
	}
	if keys := bucketKeys(t, env.q, queue.BucketDelivery); len(keys) != 4 || len(slices.DeleteFunc(keys, func(k string) bool { return strings.HasPrefix(k, "o.") })) != 2 {
		t.Errorf("delivery keys %v, want the 2 allowed deliveries' and their objects'", keys)
	}
	if keys := bucketKeys(t, env.q, stores.BucketRuns); len(keys) != 2 {
		t.Errorf("run records %v, want the 2 allowed runs'", keys)
	}
	_, metrics := env.get(t, "/metrics")
	for _, want := range []string{
		`hookrun_ingress_deliveries_total{event="pull_request",forge="github",outcome="not_allowed"} 2`,
		`hookrun_ingress_deliveries_total{event="Merge Request Hook",forge="gitlab",outcome="not_allowed"} 2`,
		`hookrun_ingress_deliveries_total{event="pull_request",forge="github",outcome="accepted"} 1`,
	} {
		mustContain(t, metrics, want)
	}
	mustContain(t, env.logs.String(), "delivery ignored: repository not allowed")
}

// TestAllowReposValidated: a malformed pattern is refused when the server is
// built.
func TestAllowReposValidated(t *testing.T) {
	err := Config{AllowRepos: []string{"myorg/*", "myorg"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "entry 1") || !strings.Contains(err.Error(), "want owner/name") {
		t.Fatalf("Validate = %v, want entry 1 refused", err)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// bucketKeys lists a KV bucket's keys through a separate NATS client.
func bucketKeys(t *testing.T, q *storestest.Queue, bucket string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := q.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
