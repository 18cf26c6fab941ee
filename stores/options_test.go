package stores

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/queue"
)

// The stores take the queue's replica count, logger, clock and timeout
// unless told otherwise, default their own TTLs, and refuse options that
// cannot work; each store's bucket carries its own configuration.
func TestOptions(t *testing.T) {
	t.Parallel()
	q := openTestOpts(t, queue.Config{}, Options{HeadTTL: 36 * time.Hour, ReceivedTTL: 2 * time.Hour})
	ctx := testCtx(t, 10*time.Second)
	o := q.Stores.opts
	sh := q.Shared()
	if o.Replicas != sh.Replicas || o.Logger != sh.Logger || o.Timeout != sh.Timeout || o.JetStream != sh.JetStream {
		t.Errorf("options %+v, want the queue's shared ones %+v", o, sh)
	}
	if o.LogMaxAge != 7*24*time.Hour || o.GroupWaiterTTL != DefaultGroupWaiterTTL {
		t.Errorf("defaults: log max age %s, group waiter ttl %s", o.LogMaxAge, o.GroupWaiterTTL)
	}
	for bucket, ttl := range map[string]time.Duration{BucketHeads: 36 * time.Hour, BucketReceived: 2 * time.Hour, BucketOutbox: 0, BucketGroups: 0} {
		kv, err := sh.JetStream.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.TTL() != ttl || st.History() != 1 || st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Storage != jetstream.FileStorage {
			t.Errorf("%s: ttl %s history %d, want ttl %s, one value per key on file storage", bucket, st.TTL(), st.History(), ttl)
		}
	}
	logs, err := sh.JetStream.Stream(ctx, StreamLogs)
	if err != nil {
		t.Fatal(err)
	}
	if c := logs.CachedInfo().Config; c.MaxAge != o.LogMaxAge || c.Duplicates != 2*time.Minute {
		t.Errorf("%s: max age %s duplicates %s", StreamLogs, c.MaxAge, c.Duplicates)
	}

	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"replicas", Options{Shared: queue.Shared{Replicas: 7}}, "replicas must be 1..5"},
		{"received ttl", Options{ReceivedTTL: time.Millisecond}, "received ttl must be at least 1s"},
		{"log max age", Options{LogMaxAge: time.Millisecond}, "log max age must be at least 1s"},
		{"head ttl", Options{HeadTTL: time.Millisecond}, "head ttl must be at least 1s"},
		{"label ttl", Options{LabelTTL: time.Millisecond}, "label ttl must be at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(context.Background(), q.Queue, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v, want %q", err, tt.want)
			}
		})
	}
}
