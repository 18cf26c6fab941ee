// Package recovery gets back webhook deliveries that failed while hookrun
// was down or unreachable: GitHub does not redeliver on its own, but it
// keeps every delivery attempt for a few days and redelivers one on
// request. Run lists a webhook's recent deliveries through GitHub's API
// (an App's webhook, or repository webhooks by id), and asks GitHub to
// deliver again each one whose every attempt failed and that hookrun has
// not stored; the redelivery carries the same X-GitHub-Delivery, so
// ingress deduplicates it like any other. `hookrun recover` runs it once,
// `hookrun serve` periodically when github.recover.interval is set.
// Other forges have no API to list or replay a webhook's deliveries
// (docs/operations.md says what to do instead).
package recovery
