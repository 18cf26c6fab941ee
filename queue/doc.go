// Package queue is hookrun's durable middle: NATS JetStream, embedded by
// default or an external cluster. It owns the HOOKRUN_RUNS work-queue stream
// of RunRequests (published by ingress, consumed by runners), the
// hookrun_runs KV bucket of run records, the hookrun_deliveries KV bucket
// that dedupes redelivered webhooks, and the HOOKRUN_LOGS stream of step
// output. It imports only workflows.
package queue
