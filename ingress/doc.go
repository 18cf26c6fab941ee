// Package ingress is where forge events enter hookrun: the HTTP edge. An
// echo server with one webhook route per forge of Config.Forges (POST
// /hooks/<forge>; 404 while the forge's webhooks are disabled) has the
// forge verify each delivery and normalize it into a workflows.Event
// (providers/forge.Webhooks: what differs between forges lives in
// providers/<forge>), asks its decide.Decider which runs the event starts
// and why every other workflow does not (package decide: matching,
// authorization, head pinning, changed files, /retry), persists the run
// requests (persist.go) and answers 202 only after every PubAck. It also
// serves health and metrics (Prometheus, a registry per server), and
// Server.RegisterAPI adds the /api/v1 routes to the same echo instance
// (Server.Route is how the web UI of ingress/ui adds its pages, and
// Server.APIRoute its POST /api/v1/sessions/revoke; LogStream is the live log
// both serve). Token checks, the API's bearer token and the UI's login form,
// go through the server's AuthGuard (guard.go): after Config.AuthLimit
// failures within its window one client address gets 429 with Retry-After.
// The client address (c.RealIP()) is the connection's peer, or what
// X-Forwarded-For / X-Real-IP say only when the peer is one of
// Config.TrustedProxies (the echo IPExtractor). Forge payload types stop
// here.
//
// What a server can do follows from the Deps given to New: the workflows
// (a workflows.WorkflowSet, which the composition root, internal/app,
// keeps reloading) and the publisher are required; with an Acceptor every
// accepted delivery is also stored (queue.AcceptDelivery), and with
// Deliveries POST /api/v1/deliveries/{id}/replay can match it again, and
// GET /api/v1/deliveries and /api/v1/deliveries/{id} show what ingress
// decided of each (deliveries.go); with
// Runs a re-run (POST /api/v1/runs/{id}/rerun, or a /retry comment or a
// forge's rerequest by a user the workflow's authorize policy admits) is a
// new run on the stored event, linked both ways and reusing the sticky
// comment (rerun.go; decide/retry.go); with
// Heads a comment's runs are pinned to the head its pull request's latest
// pull_request event named; with Index /readyz is unready while the run
// index does not follow its bucket.
//
// Answers: 202 {"delivery", "runs": [{"id", "workflow"}], "skipped":
// [{"workflow", "reason"}], "reason", "duplicate"}; 200 for a forge's ping;
// 401 {"error":"unauthorized"} for any verification failure (which check
// failed is logged at debug only, and nothing received is echoed or logged);
// 400 for missing headers or a body that does not parse; 413
// past Config.MaxBodyBytes; 503 {"error":"queue unavailable"} when any run
// request of the delivery was not persisted in time. A redelivery maps to the
// same run ids (the queue dedupes by forge:delivery:workflow) and its answer
// carries "duplicate": true with an identical "runs" list; so does the same
// event under another delivery id (a re-sent body, a second hook): each run
// is also deduplicated by the forge's object and version (decide/decide.go).
// A comment starts runs for at most CommandsConfig.MaxPerComment distinct
// command lines; the others are listed in "skipped". A re-run of a
// repository outside allow_repos is refused (403 through the API).
//
// POST /hooks/slack takes Slack slash commands (slack.go): verified by the
// v0 signing secret within a 5-minute window, turned into chat events, run
// on the repository of the chat trigger that takes them when the
// workflow's Slack allowlists let the user and channel through
// (decide.Decider.Chat), and answered 200 with an ephemeral Slack message
// once the runs are persisted.
//
// A delivery for a repository outside Config.AllowRepos (the server's
// allow_repos) is answered 202 {"delivery", "runs": [], "ignored":
// "repository not allowed"} as soon as it is normalized: nothing is matched
// or looked up, and no run, delivery key or head is written; it is counted
// (outcome "not_allowed"), logged and, when verified, stored as a summary
// without its body for the deliveries view (unmatched.go), as every
// verified delivery that is not matched against the workflows is.
//
// What authorizes an event is the author's association the forge's
// normalizer sets, or the one its forge's API reports when the payload
// carries none, and a comment whose payload names no head is pinned to
// one or Refused: package decide says how (decide/trust.go).
package ingress
