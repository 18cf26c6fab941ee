package app

import (
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
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
