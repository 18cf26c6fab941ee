package queue

import "sync"

// Message buffers are recycled once their publish is acknowledged (not
// after a failure, when the client may still hold one): a run request
// carries the whole webhook body, and the collector's share of ingest CPU
// was about a tenth. A buffer comes out empty, and none larger than
// maxPooledMsg is kept, so one huge body does not stay pinned.
// TestMsgPool guards both.
var msgPool sync.Pool // of *[]byte

const maxPooledMsg = 1 << 20

func getMsgBuf() []byte {
	if p, ok := msgPool.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

func putMsgBuf(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledMsg {
		return
	}
	msgPool.Put(&b)
}
