package queue

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/workflows"
)

// DeliverySeen reports whether a delivery holds a key in hookrun_deliveries
// (it started a run within DeliveryTTL). `hookrun recover` asks it before
// having GitHub redeliver a delivery whose answer GitHub did not get. A
// delivery id that cannot name keys readably (kvSafe) is reported unseen:
// its redelivery is deduplicated by the keys anyway.
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
