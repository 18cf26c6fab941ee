// Package ingress is where forge events enter hookrun: an echo server with
// one webhook route per forge of Config.Forges (POST /hooks/<forge>; 404
// while the forge's webhooks are disabled) that has the forge verify each
// delivery and normalize it into a workflows.Event (providers/forge.Webhooks:
// what differs between forges lives in providers/<forge>), then
// matches and authorizes them against the loaded workflows and publishes one
// queue.RunRequest per match, answering 202 only after every PubAck. It also
// serves health and metrics (Prometheus, a registry per server), and
// Server.RegisterAPI adds the /api/v1 routes to the same echo instance
// (Server.Route is how the web UI of ingress/ui adds its pages, and
// Server.APIRoute its POST /api/v1/sessions/revoke; LogStream is the live log
// both serve). Token checks, the API's bearer token and the UI's login form,
// go through the server's AuthGuard (guard.go): after Config.AuthLimit
// failures within its window one client address gets 429 with Retry-After.
// The client address (c.RealIP()) is the connection's peer, or what
// X-Forwarded-For / X-Real-IP say only when the peer is one of
// Config.TrustedProxies (the echo IPExtractor). The
// workflows come from a WorkflowSource (a workflows.WorkflowSet, which the
// composition root, internal/app, keeps reloading). Forge payload types stop
// here. Every accepted delivery is also stored (queue.AcceptDelivery), so
// that POST /api/v1/deliveries/{id}/replay can match it again; a re-run
// (POST /api/v1/runs/{id}/rerun, or a /retry comment by a user the
// workflow's authorize policy admits) is a new run on the stored event,
// linked both ways and reusing the sticky comment (rerun.go).
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
// is also deduplicated by the forge's object and version (dedupe.go). A
// comment starts runs for at most CommandsConfig.MaxPerComment distinct
// command lines; the others are listed in "skipped". A re-run of a
// repository outside allow_repos is refused (403 through the API).
//
// POST /hooks/slack takes Slack slash commands (slack.go): verified by the
// v0 signing secret within a 5-minute window, turned into chat events, run
// on the repository of the chat trigger that takes them when the
// workflow's Slack allowlists let the user and channel through, and
// answered 200 with an ephemeral Slack message once the runs are
// persisted.
//
// A delivery for a repository outside Config.AllowRepos (the server's
// allow_repos) is answered 202 {"delivery", "runs": [], "ignored":
// "repository not allowed"} as soon as it is normalized: nothing is matched,
// looked up or persisted; it is only counted (outcome "not_allowed") and
// logged.
//
// What authorizes an event is the author's association the forge's
// normalizer sets (see workflows.Workflow.Authorize for the rules, and each
// providers/<forge> package for its payloads). A comment whose payload does
// not say where its pull request's head lives is matched and authorized as
// Fork = true (the untrusted case); its runs are then pinned to the head
// the pull request had when the comment was accepted: the one remembered
// from its latest pull_request event (hookrun_heads, written for every
// pull_request event before matching), else the one the forge API reports
// (Config.Forges, bounded by LookupTimeout); HeadRef, BaseRef and Fork
// follow that head. When neither knows it, the run request is Refused and
// the runner fails it with a message asking to comment again: the tip is
// never run instead. An event whose payload carries no association
// (forge.AssociationNone) gets the one its forge's API reports once a
// workflow matched (Lookups.Association, cached for at most
// TrustConfig.AssociationTTL); without a lookup, or when it fails, the event
// stays NONE (fail closed) and the skip reason says why.
package ingress
