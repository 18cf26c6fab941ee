// Command hookrun is the single binary: `serve` (embedded NATS, ingress and
// runner in one process), `ingress` and `runner` (the halves, against a NATS
// cluster), `run` (one workflow locally, no server), `validate`, `schema` and
// `version`. It parses flags and configuration and wires the packages
// together; no logic worth testing lives here.
package main
