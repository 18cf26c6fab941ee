package stores

import (
	"errors"
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
)

// The outbox keeps one entry per key; updates and deletes compare the
// revision, so two runners never both take an entry and a newer report is
// never deleted by the delivery of an older one.
func TestOutboxStore(t *testing.T) {
	t.Parallel()
	q := openTest(t, queue.Config{})
	ctx := testCtx(t, 30*time.Second)
	s := q.Outbox()
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty outbox: %v, %v", list, err)
	}
	key := OutboxKey("01RUN", "final")
	old := &OutboxEntry{Key: key, RunID: "01RUN", Report: []byte(`{"v":1}`), CreatedAt: time.Now().UTC()}
	if err := s.Put(ctx, old); err != nil {
		t.Fatal(err)
	}
	newer := &OutboxEntry{Key: key, RunID: "01RUN", Report: []byte(`{"v":2}`), CreatedAt: time.Now().UTC()}
	if err := s.Put(ctx, newer); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || string(list[0].Report) != `{"v":2}` || list[0].Revision != newer.Revision {
		t.Fatalf("after two puts of one key: %+v, %v; want the newer one only", list, err)
	}
	old.Attempts = 1
	if err := s.Update(ctx, old); !errors.Is(err, ErrConflict) {
		t.Errorf("update at a superseded revision: %v, want ErrConflict", err)
	}
	if err := s.Delete(ctx, key, old.Revision); !errors.Is(err, ErrConflict) {
		t.Errorf("delete at a superseded revision: %v, want ErrConflict", err)
	}
	newer.Attempts = 1
	if err := s.Update(ctx, newer); err != nil {
		t.Fatalf("update at the current revision: %v", err)
	}
	if err := s.Delete(ctx, key, newer.Revision); err != nil {
		t.Fatalf("delete at the current revision: %v", err)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("after delete: %+v, %v", list, err)
	}
}
