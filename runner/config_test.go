package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
)

// TestConfigHeartbeatWithinAckWait: the claim's heartbeat beats within its
// consumer's ack wait (queue.CheckHeartbeat), the queue's default when the
// consumer sets none; the stale age defaults to StaleHeartbeats of it.
func TestConfigHeartbeatWithinAckWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{}, true},
		{"at the default ack wait", Config{HeartbeatInterval: queue.DefaultAckWait}, false},
		{"within its consumer's", Config{HeartbeatInterval: time.Second, Consumer: queue.ConsumerConfig{AckWait: 2 * time.Second}}, true},
		{"past its consumer's", Config{HeartbeatInterval: 3 * time.Second, Consumer: queue.ConsumerConfig{AckWait: 2 * time.Second}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "heartbeat interval: must be positive and shorter than the ack wait") {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
	if got := (Config{}).WithDefaults().StaleAfter; got != StaleHeartbeats*DefaultHeartbeat {
		t.Errorf("StaleAfter defaults to %s, want %d heartbeats", got, StaleHeartbeats)
	}
}
