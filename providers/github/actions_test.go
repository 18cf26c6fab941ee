package github

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/forge"
)

// TestActionCommentIgnoresForeignMarker: a marker in someone else's
// comment (an issue author who guessed the text) does not stop hookrun's
// comment; hookrun's own does, on the second try.
func TestActionCommentIgnoresForeignMarker(t *testing.T) {
	f := newFakeGitHub(t)
	r, err := New(Config{APIURL: f.url(), Token: f.token, Client: forge.Client{MaxWait: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	i := forge.Issue{Repo: f.repo, Number: 5}
	marker := forge.ActionMarker("triage", 5, "hello")
	f.seed(5, "mallory", "hello\n\n"+marker)
	ctx := context.Background()
	for try, want := range []bool{true, false} {
		posted, err := r.Comment(ctx, i, marker, "hello\n\n"+marker)
		if err != nil || posted != want {
			t.Fatalf("try %d: posted %v, %v; want %v", try+1, posted, err, want)
		}
	}
	if own := f.commentsBy(f.bot); len(own) != 1 || !strings.Contains(own[0].Body, marker) {
		t.Errorf("hookrun's comments %+v, want one with the marker", own)
	}
}
