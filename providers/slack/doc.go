// Package slack reports chat runs (workflows.KindChat, from a Slack slash
// command) where the command was typed: the final report is POSTed as a
// message to the command's response_url. It implements contract.Reporter;
// internal/app's Forges.Report hands it every report of an event with a
// Slack Chat, and the forge reporters none of them (a chat run has no pull
// request to comment on, no commit status to set).
//
// response_url is untrusted input: Slack signs the request that carries
// it, but whoever holds the signing secret could name any URL. Only a URL
// under Config.ResponseURLPrefix (https://hooks.slack.com/ by default;
// workflows.ResponseURLAllowed) is ever posted to; any other is refused
// for good (contract.ErrRefused: the outbox does not retry it). Start and
// progress reports are dropped: ingress's answer already said the run was
// queued, and a response_url takes only a few messages.
package slack
