// Package ingress is where forge events enter hookrun: an echo server that
// verifies GitHub, GitLab and Gitea (Forgejo) webhooks, one route each
// from the forgeRoutes table (POST /hooks/<forge>), normalizes them into workflows.Event,
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
// [{"workflow", "reason"}], "reason", "duplicate"}; 200 for a GitHub ping;
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
// What authorizes an event (see workflows.Workflow.Authorize for the rules):
//   - GitHub pull_request: the pull request author's author_association (the
//     code a run checks out is theirs), not the sender's, which GitHub does
//     not send. Fork: head.repo differs from base.repo, or was deleted.
//   - GitHub issue_comment: the comment's author_association. The payload
//     does not say where a pull request's head lives, so a comment on a pull
//     request is matched and authorized as Fork = true (the untrusted case).
//     Its runs are then pinned to the head the pull request had when the
//     comment was accepted: the one remembered from its latest pull_request
//     event (hookrun_heads, written for every pull_request event before
//     matching), else the one the forge API reports (Config.Forges, bounded
//     by LookupTimeout); HeadRef, BaseRef and Fork follow that head. When
//     neither knows it, the run request is Refused and the runner fails it
//     with a message asking to comment again: the tip is never run instead.
//   - GitHub issues: the issue author's author_association.
//   - Pushes (both forges): COLLABORATOR, since pushing needs write access.
//   - GitLab merge request, note and issue events: GitLab sends nothing like
//     author_association. Once a workflow matched, the author's access level
//     in the project is looked up (GET /projects/:id/members/all/:user_id
//     through the gitlab forge of Config.Forges, cached for at most 5 minutes):
//     Owner → OWNER, Maintainer and Developer → MEMBER, Reporter →
//     COLLABORATOR, anything else or no membership → NONE. The author is the
//     merge request's (its code is what runs), the note's or the issue's
//     (Event.AuthorID, in project Event.ProjectID). Without a lookup, or when
//     it fails, the event stays NONE (fail closed) and the skip reason says
//     why. Fork: source_project_id != target_project_id.
//
// Parsing: GitHub bodies are decoded into projections of go-github's event
// types, only the fields normalization reads, by the encoding/json v2
// engine (github_payload.go; FuzzGitHubProjection holds them equal to
// go-github's ParseWebHook, which decoding the whole payload made 80 % of
// the handler's CPU). GitLab bodies go through client-go's ParseWebhook.
//
// GitLab actions are mapped to GitHub's names: open → opened, reopen →
// reopened, close → closed, merge → closed with Merged, update → synchronize
// when commits changed (oldrev set) else edited; approved/unapproved and
// others pass through. Confidential issue and note hooks are not handled.
// The GitLab dedupe key is Idempotency-Key, else X-Gitlab-Event-UUID, else
// "sha256-" and the body's digest.
package ingress
