package app

import "errors"

// Mode says which halves of hookrun a process runs.
type Mode struct {
	Name    string // serve, ingress or runner: in logs and errors
	Ingress bool   // the webhook ingress and the API; needs allow_repos
	Runner  bool   // a runner, with the executors
	// ExternalNATS refuses to start without nats.url: the halves run in
	// separate processes and meet on a NATS cluster.
	ExternalNATS bool
}

// The modes of `hookrun serve`, `hookrun ingress` and `hookrun runner`.
var (
	ModeServe   = Mode{Name: "serve", Ingress: true, Runner: true}
	ModeIngress = Mode{Name: "ingress", Ingress: true, ExternalNATS: true}
	ModeRunner  = Mode{Name: "runner", Runner: true, ExternalNATS: true}
)

// Check reports what a configuration lacks for the mode: nats.url and the
// request key for the halves, allow_repos wherever webhooks are served.
func (m Mode) Check(cfg *Config) error {
	if m.ExternalNATS && cfg.NATS.URL == "" {
		return errors.New("nats.url: required for `hookrun " + m.Name + "` (use `hookrun serve` for an embedded server)")
	}
	if m.Ingress && len(cfg.AllowRepos) == 0 {
		return ErrAllowReposRequired
	}
	if m.ExternalNATS && cfg.Runs.RequestKey == "" && cfg.Runs.RequestKeyFile == "" {
		return errRequestKeyRequired
	}
	return nil
}
