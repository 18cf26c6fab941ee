package queue_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// The wire format other processes read: a change here needs WireVersion+1.
func TestRunRequestGolden(t *testing.T) {
	t.Parallel()
	req := queue.RunRequest{V: queue.WireVersion, ID: "01JDQ5Z8W6N4D4Q3G8M2X7T9AB", Workflow: "pr-review",
		WorkflowDigest: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Event:          goldenEvent(), Attempt: 1, CreatedAt: fixedTime}
	got, err := json.MarshalIndent(req, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "run_request.golden.json", append(got, '\n'))
	back, err := queue.DecodeRunRequest(got)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != req.ID || back.Event.PullRequest.HeadSHA != req.Event.PullRequest.HeadSHA || !back.CreatedAt.Equal(fixedTime) {
		t.Fatalf("round trip: %+v", back)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     queue.Config
		wantErr string
	}{
		{"embedded defaults", queue.Config{DataDir: "/tmp/x"}, ""},
		{"external", queue.Config{URL: "nats://a:4222,nats://b:4222", Replicas: 3, CredsFile: "/etc/hookrun/nats.creds"}, ""},
		{"embedded without data dir", queue.Config{}, "data dir is required"},
		{"bad listen", queue.Config{DataDir: "/d", Listen: "4222"}, "parsing listen address"},
		{"cluster without name", queue.Config{DataDir: "/d", ClusterName: "c", ClusterListen: "127.0.0.1:6222"}, "needs a server name"},
		{"replicas", queue.Config{DataDir: "/d", Replicas: 7}, "replicas must be 1..5"},
		{"tiny window", queue.Config{DataDir: "/d", DuplicateWindow: 10 * time.Millisecond}, "at least 100ms"},
		{"ttl below window", queue.Config{DataDir: "/d", DuplicateWindow: time.Hour, DeliveryTTL: time.Minute}, "shorter than the duplicate window"},
		{"tiny inline body", queue.Config{DataDir: "/d", InlineBodyMax: 100}, "inline body max must be at least 1 KiB"},
		{"tiny body ttl", queue.Config{DataDir: "/d", BodyTTL: time.Millisecond}, "body ttl must be at least 1s"},
		{"cert without key", queue.Config{URL: "nats://a:4222", CertFile: "c.pem"}, "cert file and key file go together"},
		{"sync interval", queue.Config{DataDir: "/d", Sync: "2m"}, ""},
		{"sync nonsense", queue.Config{DataDir: "/d", Sync: "sometimes"}, `parsing sync: want "always" or a positive duration`},
		{"sync negative", queue.Config{DataDir: "/d", Sync: "-1s"}, "parsing sync"},
		{"listen with auth", queue.Config{DataDir: "/d", Listen: "127.0.0.1:4222"}, ""},
		{"listen without auth", queue.Config{DataDir: "/d", Listen: "127.0.0.1:4222", InsecureNoAuth: true}, ""},
		{"insecure without listen", queue.Config{DataDir: "/d", InsecureNoAuth: true}, "nats.insecure_no_auth: applies only to the embedded server's nats.listen"},
		{"insecure on external", queue.Config{URL: "nats://a:4222", InsecureNoAuth: true}, "nats.insecure_no_auth: applies only to the embedded server's nats.listen (without nats.url)"},
		{"insecure with a password", queue.Config{DataDir: "/d", Listen: "127.0.0.1:4222", InsecureNoAuth: true, PasswordFile: "/p"}, "nats.insecure_no_auth: cannot be combined"},
		{"password and file", queue.Config{URL: "nats://a:4222", Password: "x", PasswordFile: "/p"}, "nats.password: set password or password_file, not both"},
		{"creds and password", queue.Config{URL: "nats://a:4222", CredsFile: "/c", PasswordFile: "/p"}, "nats.creds_file: cannot be combined"},
		{"external with password file", queue.Config{URL: "nats://a:4222", User: "u", PasswordFile: "/p"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.SetDefaults()
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want %q", err, tt.wantErr)
			}
		})
	}
	cc := queue.ConsumerConfig{}
	cc.SetDefaults()
	if err := cc.Validate(); err != nil || cc.Heartbeat != 10*time.Second || cc.MaxAckPending != 4 || cc.Durable != "hookrun-runner" {
		t.Fatalf("consumer defaults %+v: %v", cc, err)
	}
	bad := queue.ConsumerConfig{AckWait: time.Second, Heartbeat: 2 * time.Second}
	bad.SetDefaults()
	if err := bad.Validate(); err == nil {
		t.Fatal("heartbeat longer than ack wait accepted")
	}
}

// TestEmbeddedSyncSetting: the embedded server syncs its store every second
// by default, before every acknowledgement with always, or as configured.
func TestEmbeddedSyncSetting(t *testing.T) {
	t.Parallel()
	def := openTest(t, queue.Config{})
	if js := def.Srv().JetStreamConfig(); js == nil || js.SyncAlways || js.SyncInterval != time.Second {
		t.Fatalf("default store config %+v: want a sync every second", js)
	}
	always := openTest(t, queue.Config{Sync: queue.SyncAlways})
	if js := always.Srv().JetStreamConfig(); js == nil || !js.SyncAlways {
		t.Fatalf("sync always: store config %+v", js)
	}
	interval := openTest(t, queue.Config{Sync: "90s"})
	if js := interval.Srv().JetStreamConfig(); js == nil || js.SyncAlways || js.SyncInterval != 90*time.Second {
		t.Fatalf("sync 90s: store config %+v", js)
	}
}

// Refused travels in the run request; without it the wire format is the
// golden one (TestRunRequestGolden).
func TestRunRequestRefused(t *testing.T) {
	req := queue.RunRequest{V: queue.WireVersion, ID: "01JDQ5Z8W6N4D4Q3G8M2X7T9AB", Workflow: "review", Event: goldenEvent(), Attempt: 1,
		CreatedAt: fixedTime, Refused: "the head of pull request #2 is unknown; comment again"}
	data, err := queue.EncodeRunRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	back, err := queue.DecodeRunRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Refused != req.Refused || string(back.Event.Raw) != string(req.Event.Raw) {
		t.Fatalf("round trip: refused %q raw %s", back.Refused, back.Event.Raw)
	}
	req.Refused = ""
	data, _ = queue.EncodeRunRequest(&req)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["refused"]; ok {
		t.Fatalf("an unrefused request carries a refused field: %s", data)
	}
}

// A delivery whose runs fail to persist leaves no stored delivery either
// (the 503 leaves nothing), and its redelivery stores it again.
func TestAcceptDeliveryFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 60*time.Second)
	injected := errors.New("injected")
	for _, point := range []string{queue.FailKeys, queue.FailRecords, queue.FailMessages} {
		reqs := deliveryRequests(2)
		d := &stores.Received{Forge: workflows.Forge("github"), ID: reqs[0].Event.DeliveryID, Event: "pull_request", Raw: reqs[0].Event.Raw}
		*q.FailAt() = func(p string) error {
			if p == point {
				return injected
			}
			return nil
		}
		if _, err := q.AcceptDelivery(ctx, d, reqs); !errors.Is(err, injected) {
			t.Fatalf("%s: %v, want the injected failure", point, err)
		}
		*q.FailAt() = nil
		if _, err := q.Received().Get(ctx, workflows.Forge("github"), d.ID); !errors.Is(err, stores.ErrNotReceived) {
			t.Fatalf("%s: stored delivery after the failure: %v, want none", point, err)
		}
		if _, err := q.AcceptDelivery(ctx, d, redeliver(reqs)); err != nil {
			t.Fatalf("%s: redelivery: %v", point, err)
		}
		if _, err := q.Received().Get(ctx, workflows.Forge("github"), d.ID); err != nil {
			t.Fatalf("%s: stored delivery after the redelivery: %v", point, err)
		}
	}
}
