package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nats-io/nats.go"
)

// cancelSubjectPrefix is where the claimant of a running run hears that
// its cancel was requested: one subject per runner, so that a runner
// listens once rather than watching the record of each run it executes.
const cancelSubjectPrefix = "hookrun.cancel."

// CancelSubject is claimant's subject (a digest: a runner id may hold
// dots, which a subject token cannot). stores.RunStore.RequestCancel
// announces on it the id of each running run whose cancel it wrote.
func CancelSubject(claimant string) string {
	sum := sha256.Sum256([]byte(claimant))
	return cancelSubjectPrefix + hex.EncodeToString(sum[:12])
}

// CancelNotices calls notify, from one goroutine, with the id of each run
// claimed by claimant whose cancel is requested (from any process), until
// stop is called or the queue closes. Notices may be lost (a reconnect): a
// claimant reads CancelRequested with its heartbeat too.
func (q *Queue) CancelNotices(claimant string, notify func(runID string)) (stop func(), err error) {
	sub, err := q.nc.Subscribe(CancelSubject(claimant), func(m *nats.Msg) {
		if id := string(m.Data); CheckRunID(id) == nil {
			notify(id)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing to the cancel requests of runner %s: %w", claimant, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}
