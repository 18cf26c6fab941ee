package docker

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Config configures the Docker executors. The zero value is usable after
// setDefaults: the engine DOCKER_HOST points at, server-wide limits of
// 2 GiB / 2 CPUs / 1024 PIDs, no Docker socket in containers.
type Config struct {
	// Host is the engine's address (unix:///var/run/docker.sock, tcp://...).
	// Empty: DOCKER_HOST and the other DOCKER_* variables, else the platform default.
	Host string
	// Memory is the memory limit in bytes of a container whose workflow sets none.
	// Default 2 GiB; negative: no limit.
	Memory int64
	// CPUs is the CPU limit of a container whose workflow sets none. Default 2;
	// negative: no limit.
	CPUs float64
	// PIDs is the process limit of a container whose workflow sets none.
	// Default 1024; negative: no limit.
	PIDs int64
	// AllowDockerSocket lets a workflow volume mount the engine's socket or a
	// directory holding it. Default false: such a volume is refused, because
	// the socket is root on the host.
	AllowDockerSocket bool
	// StopGrace is the time between SIGTERM and SIGKILL when a step is stopped
	// and its request sets no Grace. Default 5s.
	StopGrace time.Duration
	// PullTimeout bounds one image pull, so that an unreachable registry fails
	// a step instead of hanging it. Default 10m.
	PullTimeout time.Duration
	// VolumeStaging is an absolute directory outside every workspace where
	// relative volume sources are pinned: each is bind-mounted, from the
	// handle its in-root resolution opened, onto <dir>/<run>/<container>/<n>
	// (root's, 0700), and the engine mounts that path, which no step can
	// swap. Pinning needs hookrun as root in the engine's mount namespace
	// (probed by New); empty, or when the probe fails: sources are checked
	// but not pinned (VolumePinning says why).
	VolumeStaging string
	// APITimeout bounds Docker API calls that must finish even when the step's
	// context is done (create, remove, inspect). Default 1m.
	APITimeout time.Duration
}

// Defaults.
const (
	DefaultMemory      int64   = 2 << 30
	DefaultCPUs        float64 = 2
	DefaultPIDs        int64   = 1024
	DefaultStopGrace           = 5 * time.Second
	DefaultPullTimeout         = 10 * time.Minute
	DefaultAPITimeout          = time.Minute
)

func (c *Config) setDefaults() {
	c.Memory = cmp.Or(c.Memory, DefaultMemory)
	c.CPUs = cmp.Or(c.CPUs, DefaultCPUs)
	c.PIDs = cmp.Or(c.PIDs, DefaultPIDs)
	c.StopGrace = cmp.Or(c.StopGrace, DefaultStopGrace)
	c.PullTimeout = cmp.Or(c.PullTimeout, DefaultPullTimeout)
	c.APITimeout = cmp.Or(c.APITimeout, DefaultAPITimeout)
}

// Validate reports every invalid field.
func (c *Config) Validate() error {
	var errs []error
	if c.Memory > 0 && c.Memory < 6<<20 {
		errs = append(errs, fmt.Errorf("memory %d: below Docker's minimum of 6 MiB", c.Memory))
	}
	if c.StopGrace < 0 {
		errs = append(errs, fmt.Errorf("stop_grace %s: negative", c.StopGrace))
	}
	if c.PullTimeout < 0 {
		errs = append(errs, fmt.Errorf("pull_timeout %s: negative", c.PullTimeout))
	}
	if c.APITimeout < 0 {
		errs = append(errs, fmt.Errorf("api_timeout %s: negative", c.APITimeout))
	}
	if c.VolumeStaging != "" && !filepath.IsAbs(c.VolumeStaging) {
		errs = append(errs, fmt.Errorf("volume_staging %q: not absolute", c.VolumeStaging))
	}
	return errors.Join(errs...)
}
