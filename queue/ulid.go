package queue

import (
	"crypto/rand"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// A ULID (github.com/ulid/spec): 48 bits of Unix milliseconds and 80 random
// bits, as 26 characters of Crockford's base32, so that the string order is
// the creation order. Ids made in the same millisecond by this process
// increment the random part (the spec's monotonic mode) and stay ordered.
// Written here rather than imported: the package hookrun used pulled in
// database/sql, whose init every command paid for at start-up.

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var ulidState struct {
	sync.Mutex
	ms   uint64
	rand [10]byte
}

// newULID returns the ULID of t.
func newULID(t time.Time) string {
	ms := uint64(t.UnixMilli())
	ulidState.Lock()
	if ms <= ulidState.ms {
		// Same (or a backwards-stepped) millisecond: keep the last
		// one's time and increment its randomness.
		ms = ulidState.ms
		incrementBytes(&ulidState.rand)
	} else {
		ulidState.ms = ms
		if _, err := rand.Read(ulidState.rand[:]); err != nil {
			panic("reading random bytes: " + err.Error()) // crypto/rand does not fail on Linux
		}
	}
	var id [16]byte
	binary.BigEndian.PutUint16(id[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(id[2:6], uint32(ms))
	copy(id[6:], ulidState.rand[:])
	ulidState.Unlock()
	return encodeULID(id)
}

// incrementBytes adds one to a big-endian number (wrapping at the top,
// which 2^80 ids in one millisecond would need).
func incrementBytes(b *[10]byte) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return
		}
	}
}

// encodeULID writes 128 bits as 26 base32 digits, 5 bits each, most
// significant first (the first digit carries the top 3 bits).
func encodeULID(id [16]byte) string {
	hi := binary.BigEndian.Uint64(id[0:8])
	lo := binary.BigEndian.Uint64(id[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// RunIDTime is when the run with ULID id was made (the id's 48 bits of
// milliseconds); false when id is not a ULID. Case does not matter, as
// for Crockford's base32 (sandbox names carry run ids in lowercase).
func RunIDTime(id string) (time.Time, bool) {
	if len(id) != 26 {
		return time.Time{}, false
	}
	var hi, lo uint64
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		d := strings.IndexByte(crockford, c)
		if d < 0 {
			return time.Time{}, false
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(d)
	}
	ms := hi >> 16 // the top 48 of the 128 bits
	return time.UnixMilli(int64(ms)).UTC(), true
}
