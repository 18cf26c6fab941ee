// Command hookrun is the single binary: `serve` (embedded NATS, ingress and
// runner in one process), `ingress` and `runner` (the halves, against a NATS
// cluster), `run` (one workflow locally, no server), `validate`, `schema`,
// `bench` and `version`, and the API client commands `runs` and
// `deliveries` (client.go, runs.go) in a spf13/cobra command tree (cli.go)
// with shell completion. It parses flags, reads the configuration file and
// handles the process (signals, GC, idle memory); internal/app builds and
// stops the stack. No logic worth testing lives here.
package main
