package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// TestServeAndIngressRequireAllowRepos: without allow_repos, `hookrun serve`
// and `hookrun ingress` refuse to start and say how to set it; a malformed
// pattern names its entry.
func TestServeAndIngressRequireAllowRepos(t *testing.T) {
	const want = `allow_repos: required: list the repositories this server acts for, e.g. allow_repos: ["myorg/*"]`
	dir := t.TempDir()
	noAllow := writeFile(t, dir+"/no-allow.yaml", "listen: 127.0.0.1:1\ndata_dir: "+dir+"/data\nworkflows: "+dir+"\n")
	external := writeFile(t, dir+"/external.yaml", "listen: 127.0.0.1:1\nnats: { url: \"nats://127.0.0.1:1\" }\n")
	badPattern := writeFile(t, dir+"/bad.yaml", "allow_repos: [\"myorg/*\", \"myorg\"]\n")
	emptyList := writeFile(t, dir+"/empty.yaml", "allow_repos: []\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"serve", []string{"serve", "--config", noAllow}, "hookrun serve: " + want},
		{"serve without a config file", []string{"serve", "--data-dir", dir + "/data"}, "hookrun serve: " + want},
		{"serve with an empty list", []string{"serve", "--config", emptyList}, "hookrun serve: " + want},
		{"ingress", []string{"ingress", "--config", external}, "hookrun ingress: " + want},
		{"malformed pattern", []string{"serve", "--config", badPattern}, `allow_repos[1]: repository pattern "myorg" has no slash`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Cancelled: a server that did start would stop at once.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var stdout, errb bytes.Buffer
			code, stderr := dispatch(ctx, tc.args, &stdout, &errb), errb.String()
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Fatalf("code %d, stderr %q; want %d and %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}

// TestRunnerAdmitsAllowRepos: the runner's check uses the same globs; a
// runner without allow_repos checks nothing.
func TestRunnerAdmitsAllowRepos(t *testing.T) {
	if admitRepos(nil) != nil {
		t.Fatal("admitRepos(nil) should check nothing")
	}
	admit := admitRepos([]string{"myorg/*", "mygroup/**"})
	for repo, ok := range map[string]bool{"MyOrg/app": true, "mygroup/a/b": true, "evil/app": false, "myorg/a/b": false, "": false} {
		err := admit(&workflows.Event{Repo: repo})
		if (err == nil) != ok {
			t.Errorf("admit(%q) = %v, want allowed %v", repo, err, ok)
		}
	}
	if err := admit(&workflows.Event{Repo: "evil/app"}); err == nil || err.Error() != `repository "evil/app" is not in allow_repos` {
		t.Errorf("refusal %v", err)
	}
}
