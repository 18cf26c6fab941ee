package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
