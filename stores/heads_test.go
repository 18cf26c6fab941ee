package stores

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// The head of a pull request survives a restart on the same data directory
// (file storage), the latest Put wins, another repository or number or forge
// is another entry, and the bucket carries the configured TTL.
func TestHeadStore(t *testing.T) {
	dir := t.TempDir()
	q := openTestOpts(t, queue.Config{DataDir: dir}, Options{HeadTTL: 36 * time.Hour})
	ctx := testCtx(t, 30*time.Second)
	hs := q.Heads()
	const a, b = "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	seen := time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC)

	if _, _, ok, err := hs.Get(ctx, workflows.Forge("github"), "Codertocat/Hello-World", 1); err != nil || ok {
		t.Fatalf("Get before any Put: ok %v err %v", ok, err)
	}
	if err := hs.Put(ctx, workflows.Forge("github"), "Codertocat/Hello-World", 1, workflows.Head{SHA: a, HeadRef: "changes", BaseRef: "master"}, seen); err != nil {
		t.Fatal(err)
	}
	if err := hs.Put(ctx, workflows.Forge("github"), "Codertocat/Hello-World", 1, workflows.Head{SHA: b, HeadRef: "changes", BaseRef: "master", Fork: true}, seen.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := hs.Put(ctx, workflows.Forge("gitlab"), "group/sub/Project.With.Dots", 1, workflows.Head{SHA: a}, seen); err != nil {
		t.Fatal(err)
	}
	if err := hs.Put(ctx, workflows.Forge("github"), "", 0, workflows.Head{SHA: a}, seen); err == nil {
		t.Fatal("Put without a number succeeded")
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	q = openTestOpts(t, queue.Config{DataDir: dir}, Options{HeadTTL: 36 * time.Hour})
	hs = q.Heads()
	tests := []struct {
		forge  workflows.Forge
		repo   string
		number int
		want   workflows.Head
		ok     bool
	}{
		{workflows.Forge("github"), "Codertocat/Hello-World", 1, workflows.Head{SHA: b, HeadRef: "changes", BaseRef: "master", Fork: true}, true},
		{workflows.Forge("github"), "codertocat/hello-world", 1, workflows.Head{SHA: b, HeadRef: "changes", BaseRef: "master", Fork: true}, true},
		{workflows.Forge("github"), "Codertocat/Hello-World", 2, workflows.Head{}, false},
		{workflows.Forge("gitlab"), "Codertocat/Hello-World", 1, workflows.Head{}, false},
		{workflows.Forge("gitlab"), "group/sub/Project.With.Dots", 1, workflows.Head{SHA: a}, true},
	}
	for _, tt := range tests {
		got, at, ok, err := hs.Get(ctx, tt.forge, tt.repo, tt.number)
		if err != nil || ok != tt.ok || got != tt.want {
			t.Errorf("Get(%s, %s, %d) = %+v, %v, %v; want %+v, %v", tt.forge, tt.repo, tt.number, got, ok, err, tt.want, tt.ok)
		}
		if ok && tt.forge == workflows.Forge("github") && !at.Equal(seen.Add(time.Minute)) {
			t.Errorf("seen at %v, want %v", at, seen.Add(time.Minute))
		}
	}

	kv, err := q.Shared().JetStream.KeyValue(ctx, BucketHeads)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	if st.TTL() != 36*time.Hour || info.Config.Storage != jetstream.FileStorage || st.History() != 1 {
		t.Fatalf("bucket: ttl %v storage %v history %d", st.TTL(), info.Config.Storage, st.History())
	}
}

func TestHeadKey(t *testing.T) {
	tests := []struct {
		forge  workflows.Forge
		repo   string
		number int
		want   string
	}{
		{workflows.Forge("github"), "Codertocat/Hello-World", 1, "github.codertocat/hello-world.1"},
		{workflows.Forge("github"), "octo/.github", 7, "github.octo/.github.7"},
		{workflows.Forge("gitlab"), "group/sub/project", 12, "gitlab.group/sub/project.12"},
	}
	for _, tt := range tests {
		if got := headKey(tt.forge, tt.repo, tt.number); got != tt.want {
			t.Errorf("headKey(%s, %q, %d) = %q, want %q", tt.forge, tt.repo, tt.number, got, tt.want)
		}
	}
	for _, repo := range []string{"a/b..c", "a/b.", ".a/b", "a/b c", "a/b*", "a/b>", strings.Repeat("x", 300)} {
		got := headKey(workflows.Forge("github"), repo, 1)
		if !strings.HasPrefix(got, "github.h-") || !strings.HasSuffix(got, ".1") || got == headKey(workflows.Forge("github"), repo+"x", 1) {
			t.Errorf("headKey(%q) = %q, want a hashed key", repo, got)
		}
	}
}
