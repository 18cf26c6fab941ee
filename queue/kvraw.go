package queue

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publish writes KV entries as plain JetStream messages on the bucket's
// subjects, so that they travel in the same round trip as the run's
// message (KeyValue.Create waits for each write). This relies on the
// bucket layout of the jetstream KV API: key k of bucket b is the last
// message on subject $KV.b.k, its revision is that message's stream
// sequence, and a create-only write expects the subject's last sequence
// to be 0. TestRawKVSubjects guards it.

// kvSubject is the subject a KV bucket stores key under.
func kvSubject(bucket, key string) string {
	return "$KV." + bucket + "." + key
}

// createAsync writes a key of a KV bucket only if it has never had a value:
// what KeyValue.Create does, without its wait. A key that exists, or that
// holds a delete marker, is refused (IsWrongLastSeq); KeyValue.Create then
// settles the marker case.
func (q *Queue) createAsync(subject string, value []byte) *pendingWrite {
	m := nats.NewMsg(subject)
	m.Data = value
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	return q.publishAsync(m)
}
