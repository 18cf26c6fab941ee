// Package bench measures hookrun against the floors it cannot beat on the
// same machine: raw JetStream publishes for ingest, a plain Go loop of
// `sh -c true` for the engine, a shell loop for `hookrun run`. It backs
// `hookrun bench` and `make bench`; every figure is a ratio against a baseline
// measured in the same run, so numbers compare across machines and commits.
// RunPeer (`hookrun bench peer`, `make bench-peer`) compares `hookrun serve`
// with adnanh/webhook, a server that runs a command per request, the two
// started in turn on the same deliveries.
// It sits beside cmd/hookrun and may import every package.
package bench
