package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
)

// TestDeliveriesKeptForRunRetention: stored deliveries and the large bodies
// they reference are kept for runs.retention (the deliveries view), never
// less than the delivery dedupe window that replays and re-runs need.
func TestDeliveriesKeptForRunRetention(t *testing.T) {
	for _, c := range []struct{ retention, want time.Duration }{
		{0, 720 * time.Hour}, // the default retention
		{240 * time.Hour, 240 * time.Hour},
		{time.Hour, queue.DefaultDeliveryTTL},
	} {
		var cfg Config
		cfg.Runs.Retention = c.retention
		cfg.SetDefaults()
		if got := cfg.storesOptions().ReceivedTTL; got != c.want {
			t.Errorf("runs.retention %v: deliveries kept %v, want %v", c.retention, got, c.want)
		}
		if got := cfg.queueConfig().BodyTTL; got != c.want {
			t.Errorf("runs.retention %v: bodies kept %v, want %v", c.retention, got, c.want)
		}
	}
}

// runs.retention reaches the sticky comment keys: a serve with a 3h
// retention records the newest run of a comment under a key that expires
// 3h after it was written.
func TestCommentKeysExpireWithRunRetention(t *testing.T) {
	wf := filepath.Join(t.TempDir(), "workflows")
	if err := os.MkdirAll(wf, 0o755); err != nil {
		t.Fatal(err)
	}
	on := true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := Start(ctx, ModeServe, &Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Workflows: wf, AllowRepos: []string{"o/*"},
		Runs:   RunsConfig{Retention: 3 * time.Hour},
		GitHub: GitHubConfig{Enabled: &on, WebhookSecret: "s"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Shutdown(context.Background()) }()
	if _, err := a.Stores().Groups().Advance(ctx, "review/o/app#1", "01A"); err != nil {
		t.Fatal(err)
	}
	st, err := a.Queue().Shared().JetStream.Stream(ctx, "KV_"+stores.BucketGroups)
	if err != nil {
		t.Fatal(err)
	}
	filter := "$KV." + stores.BucketGroups + ".comment.>"
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 1 {
		t.Fatalf("comment keys %v, want one", info.State.Subjects)
	}
	for subj := range info.State.Subjects {
		m, err := st.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get(jetstream.MsgTTLHeader); got != "3h0m0s" {
			t.Errorf("the comment key's TTL is %q, want runs.retention 3h0m0s", got)
		}
	}
}
