// Package ingress is where forge events enter hookrun: an echo server that
// verifies GitHub and GitLab webhooks, normalizes them into workflows.Event,
// matches and authorizes them against the loaded workflows and publishes one
// queue.RunRequest per match, answering 202 only after every PubAck. It also
// serves the API, health and metrics. Forge payload types stop here.
package ingress
