// Package stores keeps hookrun's run state in JetStream, beside the
// transport of package queue: what ingress, the runners and the API read
// and write about runs, while queue carries the run requests.
//
//   - RunStore (runstore.go, transitions.go, runindex.go): the
//     hookrun_runs bucket of run records. Records change only through the
//     transitions of transitions.go (queued, claim, heartbeat, release,
//     finish, request-cancel, fail), which share one compare-and-set loop
//     starting from the record this process last wrote or read of an
//     unfinished run (recenthints.go), and reading it only when that
//     write conflicts or would not be made;
//     List pages through the RunIndex, an index file on disk kept current
//     by a watch of the bucket (watchindex.go), and never reads the whole
//     bucket. It is the
//     queue's Records: publishing writes a run's queued record in the same
//     round trip as its delivery key, and the consumer fails the runs it
//     gives up on.
//   - GroupStore (groups.go): hookrun_groups, concurrency group locks,
//     cancel_in_progress groups and sticky comment owners.
//   - HeadStore (heads.go): hookrun_heads, the pull request heads ingress
//     has seen; comment-triggered runs are pinned to them.
//   - ReceivedStore (received.go): hookrun_received, the accepted
//     deliveries (event name and body) for replays and re-runs, written
//     by AcceptDelivery with the delivery's keys, all or nothing, with
//     what ingress decided of each, and the verified deliveries ingress
//     did not match against the workflows, without their body
//     (KeepUnmatched); an index key per copy lists them by outcome,
//     forge, event and repository (received.go), through the deliveries
//     index file (deliveryindex.go).
//   - OutboxStore (outbox.go): hookrun_outbox, final reports the forge did
//     not take in time, retried by runner.Outbox.
//   - LogStore (logstore.go): the HOOKRUN_LOGS stream of step output.
//   - LabelStore (heads.go, beside the heads): hookrun_labels, the labels ingress saw last
//     on each issue and pull request, for a forge whose label deliveries
//     do not say which label changed; made on demand.
//   - SessionStore (sessions.go): hookrun_sessions, the web UI's login
//     sessions, made on demand.
//   - Retention (retention.go): SweepRuns removes the runs that finished
//     longer ago than the retention with their logs, body, outbox entry
//     and group key.
//
// Each store owns its bucket's (or stream's) configuration and creates it
// itself (OpenRuns, OpenGroups, ...); the replica count, logger, clock and
// timeout are the queue's (queue.Shared). Open opens them all and hands
// the run records to the queue. It imports queue (the RunRequest wire
// type, the JetStream connection, the bodies), workflows and lines
// (the line writer it shares with the runner).
package stores
