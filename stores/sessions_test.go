package stores

import (
	"testing"
	"time"

	"github.com/hookrun/hookrun/queue"
)

// TestSessionStore: a created session is valid until its expiry, a second
// Create of the same id fails, Delete ends one session and DeleteAll every
// one; the bucket carries the session lifetime as its TTL.
func TestSessionStore(t *testing.T) {
	q := openTest(t, queue.Config{DataDir: t.TempDir()})
	ctx := testCtx(t, 30*time.Second)
	s, err := q.Sessions(ctx, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, id := range []string{"a-1", "b_2", "c3"} {
		if err := s.Create(ctx, id, now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(ctx, "a-1", now, now.Add(time.Hour)); err == nil {
		t.Error("a second Create of the same id succeeded")
	}
	if err := s.Create(ctx, "bad.id", now, now.Add(time.Hour)); err == nil {
		t.Error("a session id with a dot was accepted")
	}
	valid := func(id string, at time.Time) bool {
		t.Helper()
		ok, err := s.Valid(ctx, id, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !valid("a-1", now) || !valid("b_2", now) || valid("nope", now) || valid("bad.id", now) {
		t.Fatal("Valid after Create")
	}
	if valid("a-1", now.Add(time.Hour)) {
		t.Error("a session is valid at its expiry")
	}
	if err := s.Delete(ctx, "a-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "never-was"); err != nil {
		t.Errorf("deleting an unknown session: %v", err)
	}
	if valid("a-1", now) || !valid("b_2", now) {
		t.Error("Delete ended the wrong sessions")
	}
	n, err := s.DeleteAll(ctx)
	if err != nil || n != 2 {
		t.Fatalf("DeleteAll: %d %v, want 2", n, err)
	}
	if valid("b_2", now) || valid("c3", now) {
		t.Error("a session survived DeleteAll")
	}
	if err := s.Create(ctx, "d4", now, now.Add(time.Hour)); err != nil || !valid("d4", now) {
		t.Errorf("a new session after DeleteAll: %v", err)
	}
	st, err := s.kv.Status(ctx)
	if err != nil || st.TTL() != 2*time.Hour {
		t.Errorf("bucket TTL: %v %v, want 2h", st, err)
	}
}
