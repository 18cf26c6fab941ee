package ingress

import (
	"os"
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// BenchmarkNormalizeGitHubPullRequest measures the normalization of the
// 28 KB pull_request opened payload the ingest benchmark sends.
func BenchmarkNormalizeGitHubPullRequest(b *testing.B) {
	body, err := os.ReadFile("testdata/github/pull_request/opened.payload.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Normalize(workflows.GitHub, "pull_request", body, "d"); err != nil {
			b.Fatal(err)
		}
	}
}
