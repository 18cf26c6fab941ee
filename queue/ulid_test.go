package queue

import (
	"sort"
	"strings"
	"testing"
	"time"
)

// The encoding matches the spec's example layout: the time part of a known
// millisecond, and all-zero and all-one ids at the ends of the alphabet.
func TestULIDEncoding(t *testing.T) {
	if got := encodeULID([16]byte{}); got != "00000000000000000000000000" {
		t.Fatalf("zero id %s", got)
	}
	var ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	if got := encodeULID(ones); got != "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" {
		t.Fatalf("max id %s", got)
	}
	// 1469918176385 ms is 01ARYZ6S41 in the spec's README.
	var raw [16]byte
	ms := uint64(1469918176385)
	raw[0], raw[1], raw[2], raw[3], raw[4], raw[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	if got := encodeULID(raw)[:10]; got != "01ARYZ6S41" {
		t.Fatalf("time part %s, want 01ARYZ6S41", got)
	}
}

// The time part is the creation time's millisecond.
func TestULIDTime(t *testing.T) {
	before := time.Now().UnixMilli()
	id := NewRunID()
	var ms uint64
	for _, c := range id[:10] {
		ms = ms<<5 | uint64(strings.IndexByte(crockford, byte(c)))
	}
	if int64(ms) < before || int64(ms) > time.Now().UnixMilli() {
		t.Fatalf("id %s carries %d ms, created at about %d", id, ms, before)
	}
}

// Ids sort in creation order, also many within one millisecond, and are
// unique and valid run ids.
func TestULIDMonotonic(t *testing.T) {
	var ids []string
	for range 10000 {
		ids = append(ids, NewRunID())
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids are not in creation order")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if len(id) != 26 || seen[id] || CheckRunID(id) != nil {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}
