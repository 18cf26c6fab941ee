package queue

import "testing"

// TestMsgPool guards the pool's invariants: a buffer comes out empty, and
// none above maxPooledMsg (nor an empty one) is kept.
func TestMsgPool(t *testing.T) {
	for range 8 {
		small := append(make([]byte, 0, 4096), "left over"...)
		putMsgBuf(small)
		putMsgBuf(make([]byte, 0, maxPooledMsg+1))
	}
	reused := false
	for range 16 {
		b := getMsgBuf()
		if len(b) != 0 {
			t.Fatalf("getMsgBuf returned %d bytes of an earlier message", len(b))
		}
		if cap(b) > maxPooledMsg {
			t.Fatalf("getMsgBuf returned a %d-byte buffer: larger than maxPooledMsg (%d) must not be pooled", cap(b), maxPooledMsg)
		}
		reused = reused || cap(b) == 4096
	}
	if !reused {
		t.Log("no buffer came back (sync.Pool may drop them)")
	}
}
