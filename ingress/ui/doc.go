// Package ui is hookrun's web UI: server-rendered pages (html/template,
// with their CSS and a few lines of plain JavaScript embedded in the
// binary) that ingress serves at / beside the webhooks and /api/v1, for the
// operator who would otherwise curl the API.
//
// It sits in the flow next to the API (DESIGN.md §1, §6): it reads run
// records and logs from the queue, cancels through the same Canceller as
// POST /api/v1/runs/:id/cancel, re-runs through a Rerunner when one is
// wired, and streams live output through ingress.LogStream, the handler
// behind GET /api/v1/runs/:id/logs?follow=1.
//
// Routes (Register; none without an API token):
//
//	GET  /login, POST /login   the token form; sets the session cookie
//	POST /logout               ends the session (CSRF-checked)
//	GET  /                     runs, newest first (?workflow=&repo=&status=&pr=&cursor=)
//	GET  /runs/:id             one run: status, timings, steps (as a graph, graph.go), links, logs
//	GET  /runs/:id/summary     the run page's status, graph and steps block (the page refreshes it)
//	GET  /runs/:id/logs/stream the live log as Server-Sent Events
//	POST /runs/:id/cancel      cancel (CSRF-checked)
//	POST /runs/:id/rerun       re-run (CSRF-checked; only with a Rerunner)
//	GET  /deliveries           stored deliveries and their outcomes (?forge=&repo=&event=&outcome=&cursor=; only with Deps.Deliveries, deliveries.go)
//	GET  /deliveries/:forge/:id one delivery: event, workflows considered and why, runs, replays, headers
//	POST /deliveries/:forge/:id/replay  replay (CSRF-checked)
//	GET  /static/*             CSS and JavaScript
//	POST /api/v1/sessions/revoke  (behind the API token) ends every session
//
// Authentication: the login form takes the API token (compared in constant
// time through digests, through the server's ingress.AuthGuard: wrong tokens
// are limited per client address, with the API's, then 429) and sets a
// cookie that is not the token: an expiry and a random 256-bit session id
// signed with HMAC-SHA256 under a key derived from the token (so a token
// rotation ends every session). The session lives server-side
// (Deps.Sessions, stores.SessionStore, the hookrun_sessions bucket): the
// cookie is a session only while its id is stored, so log-out, which
// deletes it, ends the session on every replica even for a copy of the
// cookie, and revoke-all ends them all without changing the token. next=
// after login is kept only when a browser resolves it on this origin
// (localPath). The cookie is HttpOnly,
// SameSite=Strict, Path=/, Secure when the request came over TLS. Every
// page without a valid cookie redirects to /login; no token ever appears in
// a URL. Form posts carry a CSRF token, an HMAC of the session id, checked
// in constant time besides SameSite=Strict.
//
// Everything shown is escaped by html/template: pull request titles, branch
// names, comments and log lines are untrusted. The pages send a
// Content-Security-Policy that allows only this server's own script and
// style, and no framing.
package ui
