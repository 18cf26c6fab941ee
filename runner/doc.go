// Package runner claims run requests from the queue and has them executed:
// admit and recheck, claim by compare-and-set, heartbeat and cancel notices,
// workspace, the engine (runner/engine) through the Engine interface, the
// final record, ack. It is the queue consumer's handler (Runner.Handle); it
// uses workspaces and workflows only through the interfaces in
// runner/contract; internal/app (the composition root) hands it the
// implementations from providers/. Its files by job: runner.go (Config,
// Deps, New, Cancel), handle.go (Handle and what it calls, in the order it
// calls them: admitting, claiming, concurrency groups, executing the
// claimed run, the final record, and ingress's decision checked again;
// then the heartbeat: the claim kept alive, cancel requests and takeovers
// seen), outbox.go (final reports delivered later), metrics.go,
// newest.go (a run's report never overwrites a newer run's).
//
// Reporting never holds a run back: the engine sends reports beside the
// run, and a final report the forge did not take within the report timeout
// is kept in the queue's hookrun_outbox bucket, where an Outbox (outbox.go)
// retries it until it is delivered or MaxAge old. The engine reaches the
// outbox through engine.ReportKeeper and the metrics through
// engine.Observer: it imports nothing of the queue.
//
// # Lifecycle
//
// The queue hands Handle only run requests whose authenticator it verified
// (queue/request.go). Before the claim, Handle decides again what ingress
// decided: Config.Admit (allow_repos) and Config.Recheck (CheckRequest,
// handle.go: the workflow's trigger and authorize, with the functions
// ingress calls); a refusal fails the run with the reason, before any
// workspace or step.
//
// Runner.Handle, the queue consumer's handler, reads the run record
// (creating it queued if absent). A terminal record is acked and skipped. A
// record running under another claimant whose heartbeat is fresher than
// StaleAfter is retried after StaleAfter (on the last delivery before the
// queue would give up, acked instead: the claimant finishes it); a stale one
// is taken over with attempt+1. The claim is a compare-and-set (status
// running, claimant, attempt, heartbeat). While the run executes, a
// heartbeat refreshes HeartbeatAt and the step states every
// HeartbeatInterval and acts on CancelRequested (cancel the run) or another
// claim (stop: the run was lost, and its message is handed back after
// StaleAfter rather than acked, unless the run ended: the new claimant
// holds a later delivery of the same message, and an ack would end it for
// that delivery too); a cancel request is also heard at
// once on the runner's own subject (queue.CancelNotices), one
// subscription per runner rather than a watch per run. A concurrency group
// without cancel_in_progress is freed when the run's steps end, before its
// final report. A run request that ingress marked Refused (the head of the
// commented pull request could not be pinned) is failed right after the
// claim with that reason and reported: no workspace, no step, no handler.
// A workspace that cannot be prepared hands the run back (queued)
// and naks it with PrepareRetry. On shutdown the run is stopped, handed back
// (queued, attempt kept) and nak'ed for another runner. With
// concurrency.cancel_in_progress, older unfinished runs of the same group
// get CancelRequested (queued ones are cancelled at once).
package runner
