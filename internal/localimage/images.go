package localimage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/hookrun/hookrun/providers/docker/dockertest"
)

// The images' default names: what docker-compose.yml runs when
// HOOKRUN_IMAGE=hookrun-local:latest and NATS_IMAGE=hookrun-nats-local:latest
// are set (`make compose-images` prints them).
const (
	DefaultHookrunRef = "hookrun-local:latest"
	DefaultNATSRef    = "hookrun-nats-local:latest"
)

// Config says what Build builds and from what.
type Config struct {
	HookrunRef string            // name of the hookrun image; default DefaultHookrunRef
	NATSRef    string            // name of the nats image; default DefaultNATSRef
	Module     string            // directory of hookrun's go.mod; default "."
	Go         string            // the go command; default "go"
	BinDir     string            // where the binaries are built; default a temporary directory, removed after
	Busybox    string            // Debian's static busybox; default dockertest.BusyboxPath
	Git        string            // the git executable copied into the hookrun image; default: git on PATH
	Labels     map[string]string // labels of both images (a test marks its own)
}

func (c *Config) setDefaults() {
	if c.HookrunRef == "" {
		c.HookrunRef = DefaultHookrunRef
	}
	if c.NATSRef == "" {
		c.NATSRef = DefaultNATSRef
	}
	if c.Module == "" {
		c.Module = "."
	}
	if c.Go == "" {
		c.Go = "go"
	}
	if c.Busybox == "" {
		c.Busybox = dockertest.BusyboxPath
	}
}

// Validate checks that the inputs exist.
func (c *Config) Validate() error {
	var errs []error
	if _, err := os.Stat(filepath.Join(c.Module, "go.mod")); err != nil {
		errs = append(errs, fmt.Errorf("module: %w", err))
	}
	if _, err := os.Stat(c.Busybox); err != nil {
		errs = append(errs, fmt.Errorf("busybox (install busybox-static): %w", err))
	}
	if c.HookrunRef == c.NATSRef {
		errs = append(errs, fmt.Errorf("the hookrun and nats images have the same name %q", c.HookrunRef))
	}
	return errors.Join(errs...)
}

// Build compiles hookrun, hookrun-step-init and nats-server (static, CGO
// off) and imports the two images, replacing images of the same names.
func Build(ctx context.Context, cli client.APIClient, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("building the compose images: %w", err)
	}
	if cfg.Git == "" {
		git, err := exec.LookPath("git")
		if err != nil {
			return fmt.Errorf("building the compose images: the runner's checkouts need git: %w", err)
		}
		cfg.Git = git
	}
	if cfg.BinDir == "" {
		dir, err := os.MkdirTemp("", "hookrun-images-")
		if err != nil {
			return fmt.Errorf("building the compose images: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.BinDir = dir
	}
	bins := map[string]string{
		"hookrun":           "./cmd/hookrun",
		"hookrun-step-init": "./cmd/hookrun-step-init",
		"nats-server":       "github.com/nats-io/nats-server/v2", // the version go.mod requires
	}
	for _, out := range []string{"hookrun", "hookrun-step-init", "nats-server"} {
		cmd := exec.CommandContext(ctx, cfg.Go, "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(cfg.BinDir, out), bins[out])
		cmd.Dir = cfg.Module
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v: %s", out, err, bytes.TrimSpace(msg))
		}
	}
	hr, err := HookrunLayer(filepath.Join(cfg.BinDir, "hookrun"), filepath.Join(cfg.BinDir, "hookrun-step-init"), cfg.Busybox, cfg.Git)
	if err != nil {
		return err
	}
	if err := Import(ctx, cli, cfg.HookrunRef, hr, append(HookrunChanges, labels(cfg.Labels)...)); err != nil {
		return err
	}
	nats, err := NATSLayer(filepath.Join(cfg.BinDir, "nats-server"))
	if err != nil {
		return err
	}
	return Import(ctx, cli, cfg.NATSRef, nats, append(NATSChanges, labels(cfg.Labels)...))
}

func labels(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("LABEL %s=%q", k, v))
	}
	sort.Strings(out)
	return out
}

// HookrunChanges configure the hookrun image as the Dockerfile's does
// (entrypoint, default command, port, working directory), except that it
// runs as root: the runners of the compose test use the Docker socket
// without a group of its own.
var HookrunChanges = []string{
	`ENV PATH=/usr/local/bin:/usr/bin:/bin`,
	`WORKDIR /var/lib/hookrun`,
	`EXPOSE 8080`,
	`ENTRYPOINT ["/usr/local/bin/hookrun"]`,
	`CMD ["serve", "--config", "/etc/hookrun/hookrun.yaml"]`,
}

// NATSChanges make nats-server the entrypoint, as in the official image:
// the compose file's command is its arguments.
var NATSChanges = []string{
	`ENTRYPOINT ["/usr/local/bin/nats-server"]`,
	`CMD ["--jetstream", "-sd", "/data"]`,
	`EXPOSE 4222 6222 8222`,
}

// HookrunLayer is the hookrun image's root: hookrun and hookrun-step-init
// in /usr/local/bin (the runner finds the init beside itself), busybox with
// a link per applet in /bin, git at its own path with its exec path
// (`git --exec-path`, the helpers such as git-remote-http), its templates
// and the shared libraries all of them load, /etc/passwd and /etc/group,
// /tmp, /var/lib/hookrun and /etc/hookrun.
func HookrunLayer(hookrun, stepInit, busybox, git string) ([]byte, error) {
	l := NewLayer()
	for _, d := range []string{"/etc/hookrun", "/var/lib/hookrun", "/root", "/workspace"} {
		l.Dir(d, 0o755)
	}
	l.Dir("/tmp", 0o777|fs.ModeSticky)
	l.File("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nhookrun:x:10001:10001:hookrun:/var/lib/hookrun:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	l.File("/etc/group", 0o644, []byte("root:x:0:\nhookrun:x:10001:\nnogroup:x:65534:\n"))
	l.HostFile(hookrun, "/usr/local/bin/hookrun")
	l.HostFile(stepInit, "/usr/local/bin/hookrun-step-init")

	l.HostFile(busybox, "/bin/busybox")
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the applets of %s: %w", busybox, err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			l.Symlink("/bin/"+applet, "busybox")
		}
	}

	execPath, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("asking %s for its exec path: %w", git, err)
	}
	core := strings.TrimSpace(string(execPath))
	l.HostFile(git, git)
	l.HostTree(core)
	for _, tmpl := range []string{"/usr/share/git-core/templates"} {
		if _, err := os.Stat(tmpl); err == nil {
			l.HostTree(tmpl)
		}
	}
	elves := []string{git}
	entries, err := os.ReadDir(core)
	if err != nil {
		return nil, fmt.Errorf("reading git's exec path: %w", err)
	}
	for _, e := range entries {
		if p := filepath.Join(core, e.Name()); e.Type().IsRegular() && isELF(p) {
			elves = append(elves, p)
		}
	}
	libs, err := Libraries(elves...)
	if err != nil {
		return nil, err
	}
	for _, lib := range libs {
		l.HostFile(lib, lib) // the content at the path the loader looks for
	}
	return l.Bytes()
}

// NATSLayer is the nats image's root: nats-server in /usr/local/bin, /tmp,
// /data (the compose file mounts a volume there) and /etc/nats.
func NATSLayer(natsServer string) ([]byte, error) {
	l := NewLayer()
	l.Dir("/tmp", 0o777|fs.ModeSticky)
	l.Dir("/data", 0o755)
	l.Dir("/etc/nats", 0o755)
	l.HostFile(natsServer, "/usr/local/bin/nats-server")
	return l.Bytes()
}

func isELF(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && string(magic) == "\x7fELF"
}

// Import imports layer as the image ref (replacing an image of that name)
// with the Dockerfile instructions changes.
func Import(ctx context.Context, cli client.APIClient, ref string, layer []byte, changes []string) error {
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: bytes.NewReader(layer), SourceName: "-"}, ref,
		image.ImportOptions{Message: "hookrun local image (internal/localimage)", Changes: changes})
	if err != nil {
		return fmt.Errorf("importing image %s: %w", ref, err)
	}
	defer rc.Close()
	out, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("importing image %s: %w", ref, err)
	}
	if bytes.Contains(out, []byte(`"error"`)) {
		return fmt.Errorf("importing image %s: %s", ref, bytes.TrimSpace(out))
	}
	return nil
}
