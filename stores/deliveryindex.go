package stores

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"
)

// deliveryIndex answers ReceivedStore.List: the index keys of
// hookrun_received (x.<inverted time>.<forge>.<outcome>.<event>.<repo>.<ref>,
// received.go) with their summaries, in an index file on disk fed by a
// watch of those keys (watchindex.go). A row is stored once under its
// position (the receipt time and the ref: 14 bytes, oldest first, so that
// a new row is appended) and listed in each of the 15 lists of the
// combinations of its four filter tokens (forge, outcome, event,
// repository; interned ids) that name at least one, each a bucket of
// positions; a page is a seek and a walk back of its rows. The bucket's entries
// expire (Options.ReceivedTTL) without a marker: a list leaves out the
// rows older than the TTL and the index drops them about once a minute.
type deliveryIndex struct {
	*watchIndex
	ttl time.Duration
	now func() time.Time
}

// The deliveries index's buckets.
var (
	bucketDeliveryRows  = []byte("rows")  // position → key length (2) + key + summary
	bucketDeliveryLists = []byte("lists") // a bucket per list (mask + token ids) of positions
)

// deliveryIndexFile is the deliveries index's file in the index directory.
const deliveryIndexFile = "deliveries.db"

// deliveryPosLen is the length of a row's position.
const deliveryPosLen = 8 + 6

func newDeliveryIndex(js jetstream.JetStream, dir string, ttl time.Duration, now func() time.Time, log interface{ Warn(string, ...any) }) *deliveryIndex {
	x := &deliveryIndex{ttl: ttl, now: now}
	x.watchIndex = newWatchIndex("deliveries index", deliveryIndexFile, dir, js, BucketReceived, "x.>", 0, log, indexHooks{
		buckets: [][]byte{bucketDeliveryRows, bucketDeliveryLists},
		apply:   x.apply,
		tick:    x.dropExpired,
	})
	return x
}

// parsedKey is an index key's parts: its position and its four tokens
// (forge, outcome, event, repository).
type parsedKey struct {
	pos    []byte
	tokens [4]string
}

// parseIndexKey splits an index key (indexKey); false for another key.
func parseIndexKey(key string) (parsedKey, bool) {
	parts := strings.Split(key, ".")
	if len(parts) != 7 || parts[0] != "x" || len(parts[1]) != 19 || len(parts[6]) != 12 {
		return parsedKey{}, false
	}
	inv, err := strconv.ParseUint(parts[1], 10, 64)
	ref, herr := hex.DecodeString(parts[6])
	if err != nil || herr != nil {
		return parsedKey{}, false
	}
	// The time ascending (a new row is appended), the ref complemented:
	// a walk from the end has the rows of one instant in key order.
	p := parsedKey{pos: binary.BigEndian.AppendUint64(make([]byte, 0, deliveryPosLen), math.MaxInt64-inv)}
	for _, c := range ref {
		p.pos = append(p.pos, ^c)
	}
	copy(p.tokens[:], parts[2:6])
	return p, true
}

// receivedAt is the receipt time a position holds.
func receivedAt(pos []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(pos)))
}

// deliveryList is the name of the list of mask (a bucket nested in the
// lists bucket, holding the rows' positions), whose tokens' ids are ids.
func deliveryList(mask uint8, ids [4]uint32) []byte {
	b := make([]byte, 1, 1+16)
	b[0] = mask
	for i, id := range ids {
		if mask&(1<<i) != 0 {
			b = binary.BigEndian.AppendUint32(b, id)
		}
	}
	return b
}

// listNames are the names of a row's lists.
func (x *deliveryIndex) listNames(tx *bolt.Tx, p parsedKey) ([][]byte, error) {
	var ids [4]uint32
	for i, t := range p.tokens {
		id, err := x.names.intern(tx, t)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	names := make([][]byte, 0, 15)
	for mask := uint8(1); mask < 16; mask++ {
		names = append(names, deliveryList(mask, ids))
	}
	return names, nil
}

// apply files one change of the index keys: a put adds a row (a row is
// never changed), a removal drops it.
func (x *deliveryIndex) apply(tx *bolt.Tx, e *indexChange, _ uint64) (count int, wrote bool, _ error) {
	p, ok := parseIndexKey(e.key)
	if !ok {
		return 0, false, nil
	}
	rows := tx.Bucket(bucketDeliveryRows)
	had := rows.Get(p.pos) != nil
	switch {
	case !e.put && !had, e.put && had:
		return 0, false, nil
	case !e.put:
		return -1, true, x.drop(tx, p)
	}
	names, err := x.listNames(tx, p)
	if err != nil {
		return 0, false, err
	}
	lists := tx.Bucket(bucketDeliveryLists)
	rows.FillPercent = indexFillPercent
	for _, name := range names {
		b, err := lists.CreateBucketIfNotExists(name)
		if err != nil {
			return 0, false, err
		}
		b.FillPercent = indexFillPercent
		if err := b.Put(p.pos, nil); err != nil {
			return 0, false, err
		}
	}
	v := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(e.key)+len(e.value)), uint16(len(e.key)))
	v = append(append(v, e.key...), e.value...)
	return 1, true, rows.Put(p.pos, v)
}

// drop removes a row and its list keys.
func (x *deliveryIndex) drop(tx *bolt.Tx, p parsedKey) error {
	names, err := x.listNames(tx, p)
	if err != nil {
		return err
	}
	lists := tx.Bucket(bucketDeliveryLists)
	for _, name := range names {
		if b := lists.Bucket(name); b != nil {
			if err := b.Delete(p.pos); err != nil {
				return err
			}
		}
	}
	return tx.Bucket(bucketDeliveryRows).Delete(p.pos)
}

// splitRow is a row's index key and summary.
func splitRow(v []byte) (key string, summary []byte, ok bool) {
	if len(v) < 2 {
		return "", nil, false
	}
	n := int(binary.BigEndian.Uint16(v))
	if len(v) < 2+n {
		return "", nil, false
	}
	return string(v[2 : 2+n]), v[2+n:], true
}

// deliveryExpireMax is the most rows dropExpired drops at once: its calls
// are about a minute apart, so the index keeps up with 333 deliveries a
// second.
const deliveryExpireMax = 20_000

// dropExpired drops the rows older than the TTL (the oldest rows are the
// first).
func (x *deliveryIndex) dropExpired(tx *bolt.Tx, now time.Time) (int, error) {
	cutoff := now.Add(-x.ttl)
	var gone []parsedKey
	c := tx.Bucket(bucketDeliveryRows).Cursor()
	for k, v := c.First(); k != nil && len(gone) < deliveryExpireMax && receivedAt(k).Before(cutoff); k, v = c.Next() {
		key, _, _ := splitRow(v)
		if p, ok := parseIndexKey(key); ok {
			gone = append(gone, p)
		}
	}
	for _, p := range gone {
		if err := x.drop(tx, p); err != nil {
			return 0, err
		}
	}
	return -len(gone), nil
}

// page returns the rows f selects after f.Cursor (an index key), newest
// first, at most f.Limit, and the cursor of the next page.
func (x *deliveryIndex) page(f DeliveryFilter) ([]DeliverySummary, string, error) {
	tok := [4]string{string(f.Forge), f.Outcome, f.Event, f.Repo}
	var (
		mask uint8
		ids  [4]uint32
	)
	for i, t := range tok {
		if t == "" {
			continue
		}
		id, ok := x.names.lookup(indexToken(t))
		if !ok {
			return nil, "", nil
		}
		mask, ids[i] = mask|1<<i, id
	}
	var after []byte
	if f.Cursor != "" {
		p, ok := parseIndexKey(f.Cursor)
		if !ok {
			return nil, "", fmt.Errorf("listing deliveries: %w", ErrBadCursor)
		}
		after = p.pos
	}
	cutoff := x.now().Add(-x.ttl)
	var (
		out  []DeliverySummary
		next string
	)
	err := x.view(func(tx *bolt.Tx) error {
		rows := tx.Bucket(bucketDeliveryRows)
		b := rows
		if mask != 0 {
			if b = tx.Bucket(bucketDeliveryLists).Bucket(deliveryList(mask, ids)); b == nil {
				return nil
			}
		}
		last := ""
		var err error
		walkBack(b.Cursor(), nil, after, func(pos, _ []byte) bool {
			if receivedAt(pos).Before(cutoff) {
				return false // expired, and so is every older row
			}
			if len(out) == f.Limit {
				next = last
				return false
			}
			key, sum, ok := splitRow(rows.Get(pos))
			if !ok {
				return true
			}
			var s DeliverySummary
			if err = json.Unmarshal(sum, &s); err != nil {
				err = fmt.Errorf("listing deliveries: decoding %s: %w", key, err)
				return false
			}
			out, last = append(out, s), key
			return true
		})
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}
