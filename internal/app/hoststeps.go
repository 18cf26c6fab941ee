package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookrun/hookrun/providers/git"
	"github.com/hookrun/hookrun/providers/host"
	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// stepUser is runner.step_user resolved.
type stepUser struct {
	uid, gid uint32
	name     string // for USER and LOGNAME; the passwd name when there is one
	home     string // its passwd home directory; "" when it has none
}

// parseStepUser reads "UID:GID", "UID" (group = the user's primary group,
// else the same number) or a user name, and refuses root.
func parseStepUser(s string) (stepUser, error) {
	var u stepUser
	num := func(v string) (uint32, error) {
		n, err := strconv.ParseUint(v, 10, 32)
		return uint32(n), err
	}
	uidText, gidText, hasGID := strings.Cut(strings.TrimSpace(s), ":")
	uid, err := num(uidText)
	switch {
	case err == nil:
		u.uid, u.gid = uid, uid
		if pw, err := user.LookupId(uidText); err == nil {
			u.name, u.home = pw.Username, pw.HomeDir
			if g, err := num(pw.Gid); err == nil {
				u.gid = g
			}
		}
	case uidText == "":
		return u, errors.New("must be UID:GID, UID or a user name, got an empty value")
	default:
		pw, err := user.Lookup(uidText)
		if err != nil {
			return u, fmt.Errorf("user %q: %w", uidText, err)
		}
		u.name, u.home = pw.Username, pw.HomeDir
		if u.uid, err = num(pw.Uid); err != nil {
			return u, fmt.Errorf("user %q has a non-numeric uid %q", uidText, pw.Uid)
		}
		if u.gid, err = num(pw.Gid); err != nil {
			return u, fmt.Errorf("user %q has a non-numeric gid %q", uidText, pw.Gid)
		}
	}
	if hasGID {
		g, err := num(gidText)
		if err != nil {
			return u, fmt.Errorf("group %q must be a number", gidText)
		}
		u.gid = g
	}
	if u.uid == 0 || u.gid == 0 {
		return u, fmt.Errorf("%q is root: host steps must not run with root's privileges (use host_steps: same_user to run them as hookrun itself, knowingly)", s)
	}
	if u.name == "" {
		u.name = "hookrun-step"
	}
	return u, nil
}

// hostSteps is how a server runs host steps, decided once at start.
type hostSteps struct {
	exec  contract.Executor
	owner *git.Owner // who the run directories belong to; nil: hookrun
	// user is who isolated host steps run as; nil when they run as
	// hookrun (same_user) or are refused.
	user *stepUser
}

// sbxHostEnv is engine.Config.SbxHostEnv for these host steps: env
// (sbx.HostEnv of hookrun's environment) as it is when host steps run as
// hookrun's own user; for isolated steps, which run as step_user and cannot
// read hookrun's HOME, HOME is step_user's passwd home directory (where
// its own sbx login lives, given on purpose; without one, the run's own
// empty HOME stays and sbx finds no login) and the XDG_* variables, which
// name hookrun's user's directories, are left out. A value that is one of
// the server's credentials is never passed.
func (h hostSteps) sbxHostEnv(env []workflows.EnvVar, credentials []string) []workflows.EnvVar {
	var out []workflows.EnvVar
	for _, v := range env {
		if slices.Contains(credentials, v.Value) {
			continue
		}
		if h.user != nil {
			if v.Name == "HOME" {
				if h.user.home == "" {
					continue
				}
				v.Value = h.user.home
			}
			if strings.HasPrefix(v.Name, "XDG_") {
				continue
			}
		}
		out = append(out, v)
	}
	return out
}

// newHostSteps decides how `serve` and `runner` run host steps (DESIGN §4):
//   - isolated (the default) as root: as runner.step_user in their own
//     mount, PID, IPC and UTS namespaces with data_dir, the configuration file and
//     key files hidden; if this machine cannot create the namespaces, host
//     steps are refused with the reason;
//   - isolated when hookrun is not root: refused (it cannot switch users);
//   - same_user: as hookrun itself, with a warning at start, contained
//     (sameUserSteps).
//
// euid is the effective uid of this process.
func newHostSteps(ctx context.Context, cfg *Config, euid int, logger *slog.Logger) hostSteps {
	if cfg.Runner.HostSteps == HostStepsSameUser {
		logger.Warn("runner.host_steps is same_user: host steps run with hookrun's own privileges and can read its credentials "+
			"(its environment, the configuration file, data_dir with every payload and workspace); run untrusted code in containers or sbx",
			"uid", euid)
		return hostSteps{exec: sameUserSteps(ctx, cfg, logger)}
	}
	if euid != 0 {
		reason := fmt.Sprintf("host steps are refused: hookrun runs as uid %d, not root, so it cannot run them as runner.step_user "+
			"out of reach of its credentials; run the step in a container (container:) or sbx, start hookrun as root, "+
			"or set runner.host_steps: same_user to run host steps as uid %d (they can then read hookrun's credentials)", euid, euid)
		logger.Warn("host steps are refused (runner.host_steps: isolated needs root)", "uid", euid)
		return hostSteps{exec: host.Refusing{Reason: reason}}
	}
	u, err := parseStepUser(cfg.Runner.StepUser)
	if err != nil { // Validate checked it already
		return hostSteps{exec: host.Refusing{Reason: "host steps are refused: runner.step_user: " + err.Error()}}
	}
	iso := &host.Isolation{UID: u.uid, GID: u.gid, Username: u.name, Hide: hiddenPaths(cfg)}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := iso.Probe(pctx); err != nil {
		reason := "host steps are refused: they run isolated (runner.host_steps: isolated) in their own mount, PID, IPC and UTS namespaces, " +
			"which this runner cannot create (" + err.Error() + "); run the step in a container (container:) or sbx, " +
			"give hookrun CAP_SYS_ADMIN, or set runner.host_steps: same_user"
		logger.Error("host steps are refused: cannot isolate them", "err", err)
		return hostSteps{exec: host.Refusing{Reason: reason}}
	}
	attrs := []any{"step_user", cfg.Runner.StepUser, "uid", u.uid, "gid", u.gid, "hidden", iso.Hide, "launch", iso.LaunchUsed()}
	if err := host.DirectLaunchError(); err != nil {
		attrs = append(attrs, "init", iso.InitPath(), "no_direct_launch", err.Error())
	}
	logger.Info("host steps run isolated", attrs...)
	return hostSteps{
		exec:  host.New(host.Config{Isolation: iso}),
		owner: &git.Owner{UID: int(u.uid), GID: int(u.gid)},
		user:  &u,
	}
}

// sameUserSteps is the executor of same_user host steps, which no process
// of theirs may outlive, a kill -9 of hookrun included: each in a PID
// namespace of its own (through a user namespace when hookrun is not
// root) when this machine allows it; otherwise each step's process group
// is recorded under data_dir/host-steps and killed at the next start,
// should hookrun die first. Leftovers of a previous process are reaped
// here, in either case.
func sameUserSteps(ctx context.Context, cfg *Config, logger *slog.Logger) contract.Executor {
	records := filepath.Join(cfg.DataDir, "host-steps")
	if abs, err := filepath.Abs(records); err == nil {
		records = abs
	}
	if n, err := host.ReapLeftovers(records); err != nil {
		logger.Warn("could not reap the host steps a previous hookrun left running", "err", err)
	} else if n > 0 {
		logger.Warn("killed what host steps of a previous hookrun left running", "groups", n)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := host.ProbeContain(pctx, ""); err != nil {
		logger.Warn("host steps run without a PID namespace of their own (this machine allows none to hookrun's user): "+
			"a step's processes that leave its process group (setsid) can outlive it and a killed hookrun; "+
			"the rest are killed when the step ends, or at the next start", "err", err, "records", records)
		return host.New(host.Config{LeftoversDir: records})
	}
	logger.Info("host steps run as hookrun's user, each in a PID namespace of its own")
	return host.New(host.Config{Contain: true})
}

// hiddenPaths are what an isolated host step must not reach: data_dir (the
// NATS store with every payload, the mirrors, other runs' workspaces), the
// configuration file and the key and credential files it names.
func hiddenPaths(cfg *Config) []string {
	var out []string
	for _, p := range []string{cfg.DataDir, cfg.Path, cfg.GitHub.PrivateKeyFile, cfg.NATS.CredsFile, cfg.NATS.KeyFile, cfg.NATS.PasswordFile} {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		out = append(out, abs)
	}
	return out
}

// secureDataDir creates data_dir private to hookrun (0700), and tightens an
// existing one: isolated steps cannot see it anyway, this also keeps other
// local users out.
func secureDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating data_dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("securing data_dir: %w", err)
	}
	return nil
}

// serverCredentials are the secret values of the configuration: every run
// masks them in its logs, errors and report, should a step get hold of one
// (same_user) or echo one it was given.
func serverCredentials(cfg *Config) []string {
	out := append([]string{cfg.GitHub.Token, cfg.GitLab.Token, cfg.Gitea.Token, cfg.API.Token, cfg.NATS.Password}, cfg.GitHubSecrets()...)
	out = append(out, cfg.GitLabTokens()...)
	out = append(out, cfg.GiteaSecrets()...)
	out = append(out, cfg.SlackSecrets()...)
	if cfg.GitHub.PrivateKeyFile != "" {
		if key, err := os.ReadFile(cfg.GitHub.PrivateKeyFile); err == nil {
			out = append(out, string(key))
		}
	}
	// The NATS password of a file: the configured one, or the embedded
	// server's generated one.
	pwFile := cfg.NATS.PasswordFile
	if pwFile == "" && cfg.NATS.URL == "" {
		pwFile = filepath.Join(cfg.DataDir, "nats", queue.DefaultPasswordFileName)
	}
	if pw, err := os.ReadFile(pwFile); err == nil {
		out = append(out, strings.TrimSpace(string(pw)))
	}
	return nonEmpty(out)
}
