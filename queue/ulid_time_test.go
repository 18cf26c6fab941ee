package queue

import (
	"strings"
	"testing"
	"time"
)

func TestRunIDTime(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 2, 3, 456e6, time.UTC)
	id := newULID(at)
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
