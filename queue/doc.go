// Package queue is hookrun's durable middle: NATS JetStream, embedded by
// default or an external cluster. It owns the HOOKRUN_RUNS work-queue stream
// of RunRequests (published by ingress, consumed by runners), the
// hookrun_runs KV bucket of run records, the hookrun_deliveries KV bucket
// that dedupes redelivered webhooks, the hookrun_heads KV bucket of pull
// request heads ingress has seen (HeadStore: comment-triggered runs are
// pinned to them), the hookrun_outbox KV bucket of final reports the forge
// did not take in time (OutboxStore, retried by runner.Outbox), the
// hookrun_received KV bucket of accepted deliveries (ReceivedStore: event
// name and body, for replays and re-runs; AcceptDelivery writes it with the
// delivery's keys, all or nothing), the hookrun_sessions KV bucket of the
// web UI's login sessions (SessionStore, made on demand by Sessions: an
// entry per session id, expiring with the session lifetime, deleted at
// log-out), the HOOKRUN_SCHEDULES stream of workflow schedules (Schedules:
// JetStream message schedules, one definition message per workflow trigger
// that the server itself turns into ticks, handed each to one consumer of
// all the processes sharing the durable consumer; made on demand), and the
// HOOKRUN_LOGS stream of step output. It imports
// only workflows (and internal/lines, the line writer it shares with the
// runner).
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
// duplicate window), so handlers claim runs in hookrun_runs with
// compare-and-set and skip runs that already ended. Records change only
// through the transitions of transitions.go (queue, claim, heartbeat,
// release, finish, request-cancel, fail), which share one compare-and-set
// loop. A run never vanishes
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
// Authenticated requests (reqauth.go): Publish signs every run request
// with Config.RequestKey (an HMAC-SHA256 in the Hookrun-Mac header, over
// the subject and the exact body, which carries a stored body's digest);
// a Consumer terminates, logs and counts a message without a valid one
// before anything else and writes no record for it.
//
// Bounded records: RunStore.List pages, filtered, through the RunIndex (an
// in-memory index kept current by a watch of hookrun_runs) and never reads
// the whole bucket; SweepRuns (StartRetention) removes the runs that
// finished longer ago than the retention with their logs, body, outbox
// entry and group key; a cancel_in_progress run starts through its
// group's one key (GroupStore.StartNewest).
package queue
