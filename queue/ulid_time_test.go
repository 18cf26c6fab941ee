package queue

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

func TestRunIDTime(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 2, 3, 456e6, time.UTC)
	// Encoded directly: newULID keeps its ids ordered, so an earlier time
	// than its last id's would not show.
	var b [16]byte
	ms := uint64(at.UnixMilli())
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	copy(b[6:], "0123456789")
	id := encodeULID(b)
	if now, ok := RunIDTime(NewRunID()); !ok || time.Since(now) > time.Minute {
		t.Errorf("RunIDTime(NewRunID()) = %v %v", now, ok)
	}
	for _, s := range []string{id, strings.ToLower(id)} {
		got, ok := RunIDTime(s)
		if !ok || !got.Equal(at) {
			t.Errorf("RunIDTime(%q) = %v %v, want %v", s, got, ok, at)
		}
	}
	for _, bad := range []string{"", "r1", "contracttest-0123456789abc", strings.Repeat("U", 26)} {
		if _, ok := RunIDTime(bad); ok {
			t.Errorf("RunIDTime(%q) ok", bad)
		}
	}
}
