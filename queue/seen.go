package queue

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hookrun/hookrun/workflows"
)

// deliveriesConfig is hookrun_deliveries: a delivery's (and a forge
// object's) keys, each naming the run it started, for DeliveryTTL.
func deliveriesConfig(cfg Config) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      BucketDelivery,
		Description: "hookrun webhook delivery dedupe",
		TTL:         cfg.DeliveryTTL,
	}
}

// DeliverySeen reports whether a delivery holds a key in hookrun_deliveries
// (it started a run within DeliveryTTL). `hookrun recover` asks it before
// having the forge redeliver a delivery whose answer the forge did not
// get. A delivery id that cannot name keys readably (kvSafe) is reported
// unseen: its redelivery is deduplicated by the keys anyway.
func (q *Queue) DeliverySeen(ctx context.Context, forge workflows.Forge, delivery string) (bool, error) {
	if !kvSafe.MatchString(string(forge)) || !kvSafe.MatchString(delivery) || len(delivery) > 128 {
		return false, nil
	}
	l, err := q.delKV.ListKeysFiltered(ctx, string(forge)+"."+delivery+".*")
	if err != nil {
		return false, fmt.Errorf("looking up delivery %s: %w", delivery, err)
	}
	defer func() { _ = l.Stop() }()
	for range l.Keys() {
		return true, nil
	}
	return false, nil
}
