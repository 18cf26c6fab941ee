package main

import (
	"io"

	"github.com/hookrun/hookrun/providers/harness"
	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/runner"
)

// runtimeOptions are the settings the executors take from the server
// configuration.
type runtimeOptions struct {
	AllowDockerSocket bool   // let workflows mount the Docker socket
	SbxBinary         string // path of the sbx CLI
}

// localProviders builds the executors steps run in. Container and sandbox
// providers are added when their packages are wired.
func localProviders(_ runtimeOptions, _ io.Writer) (runner.Providers, func()) {
	return runner.Providers{
		Host:    host.New(host.Config{}),
		Harness: runner.HarnessFunc(harness.Run),
	}, func() {}
}
