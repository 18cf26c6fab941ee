// Package queue is hookrun's transport: NATS JetStream, embedded by
// default or an external cluster. It owns the HOOKRUN_RUNS work-queue
// stream of RunRequests (published by ingress, consumed by runners), the
// hookrun_deliveries KV bucket that dedupes redelivered webhooks, the
// hookrun_bodies object store of webhook bodies too large to travel
// inside a run request, and the HOOKRUN_SCHEDULES stream of workflow
// schedules (Schedules: JetStream message schedules, one definition
// message per workflow trigger that the server itself turns into ticks,
// handed each to one consumer of all the processes sharing the durable
// consumer; made on demand). It imports only workflows.
//
// The run state (records and their transitions, index, groups, heads,
// received deliveries, outbox, logs, retention) is package stores, which
// imports this one. The queue keeps the run records in step with the
// stream through Records, a small interface the stores' RunStore
// satisfies and stores.Open hands over (UseRecords): publishing writes a
// run's queued record in the same round trip as its delivery key, the
// consumer reconciles a delivered request with its record and fails the
// runs it gives up on. AcceptDelivery writes an Entry beside a delivery's
// runs, all or nothing with them (the stores' received deliveries).
//
// Exactly-once in effect: PublishDelivery maps each (forge, delivery,
// workflow) to one run id through a create-only hookrun_deliveries entry and
// publishes with Nats-Msg-Id, so concurrent or later redeliveries of a
// webhook return the same run. A run whose request names its forge object
// (RunRequest.Object) also gets a create-only object key in the same bucket,
// written in the same round trip: the same object under another delivery id
// maps to the run it started (PublishResult.SameObject), and its messages
// carry that run's Nats-Msg-Id (ObjectKey). A delivery's runs are persisted all or
// nothing: keys and records first, then its messages as one atomic batch,
// the commit point. A body too large to travel inside a run request is
// stored once in the hookrun_bodies object store and referenced. Delivery is at-least-once: a run request may reach a
// handler again (a lost ack, a runner that died, a replay after the
// duplicate window), so handlers claim runs in their records with
// compare-and-set and skip runs that already ended (stores'
// transitions). A run never vanishes
// silently: a handler's Term, the last failed delivery and the
// max-deliveries advisory (runners died each time) all mark its record
// failed with the reason.
//
// Authentication: the embedded server opens no TCP port unless
// Config.Listen (or ClusterListen) is set, and then requires a user and
// password of every client and route (auth.go): Config.Password, or the
// content of Config.PasswordFile, which Open creates with a random
// password (mode 0600) at the first start and reuses afterwards; the
// process's own in-process connections present them too. Only
// Config.InsecureNoAuth opens the port without them, with a warning at
// every start. Against an external cluster Open presents User with
// Password or PasswordFile, or CredsFile, or TLS client certificates. No
// password reaches a log line or an error; the start-up log names the file.
//
// Authenticated requests (request.go): Publish signs every run request
// with Config.RequestKey (an HMAC-SHA256 in the Hookrun-Mac header, over
// the subject and the exact body, which carries a stored body's digest);
// a Consumer terminates, logs and counts a message without a valid one
// before anything else and writes no record for it.
//
// A delivery's way through the consumer (Consumer.handle) is a short
// pipeline of named steps, each of which may settle the message:
// authenticate, decode, reconcile (with its delivery key and record), load
// the body, execute (the handler under an in-progress heartbeat, parked
// while it waits for its group), settle (ack, hand back, give up, or nak
// with the backoff).
package queue
