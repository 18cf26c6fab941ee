// Package dockertest holds what the Docker tests share: a client that
// checks the daemon answers, the local test image and a check for leftover
// containers. The image, hookrun-test-busybox:latest, is built without a
// registry: a tar holding Debian's static busybox, one symlink per applet the
// tests use, /etc/passwd, and empty /tmp and /workspace directories,
// imported through the Docker API.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Ref is the image the tests use.
const Ref = "hookrun-test-busybox:latest"

// BusyboxPath is where Debian's busybox-static installs the binary.
const BusyboxPath = "/bin/busybox"

// applets get a symlink to busybox under /bin.
var applets = []string{
	"sh", "ash", "echo", "cat", "sleep", "pwd", "printf", "env", "printenv", "ls",
	"mkdir", "touch", "rm", "wc", "head", "tail", "id", "kill", "setsid", "true",
	"false", "test", "[", "grep", "sed", "tr", "seq", "yes", "ps", "dd", "cp", "mv",
	"date", "uname", "stat", "xargs", "sort", "timeout", "whoami", "hostname",
}

var (
	once    sync.Once
	onceErr error
)

// Ensure builds Ref once per process when it is missing. Several test
// binaries may race to build it: an import that loses the race only retags
// identical content, which is harmless.
func Ensure(ctx context.Context, cli client.APIClient) error {
	once.Do(func() { onceErr = EnsureRef(ctx, cli, Ref, false) })
	return onceErr
}

// EnsureRef builds ref when it is missing, or always with force.
func EnsureRef(ctx context.Context, cli client.APIClient, ref string, force bool) error {
	if !force {
		if _, err := cli.ImageInspect(ctx, ref); err == nil {
			return nil
		} else if !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("inspecting image %s: %w", ref, err)
		}
	}
	return Build(ctx, cli, ref)
}

// Build imports ref from BusyboxPath, replacing any image of that name.
func Build(ctx context.Context, cli client.APIClient, ref string) error {
	return build(ctx, cli, ref, nil, nil)
}

// StandIn holds what EnsureStandIn did, so the test can undo it.
type StandIn struct {
	Ref     string
	Created bool // the image was absent and the stand-in was built
}

// StandInLabel marks the images EnsureStandIn builds.
const StandInLabel = "hookrun.test-stand-in"

// EnsureStandIn makes ref (an image a documented example names, such as
// alpine:3.20) available without a registry: when the daemon has no image
// of that name, it builds the test image's busybox layer plus files (path →
// content, e.g. etc/alpine-release) under that name, labelled StandInLabel.
// An existing image is never touched. Remove undoes what it built.
func EnsureStandIn(ctx context.Context, cli client.APIClient, ref string, files map[string]string) (StandIn, error) {
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return StandIn{Ref: ref}, nil
	} else if !cerrdefs.IsNotFound(err) {
		return StandIn{}, fmt.Errorf("inspecting image %s: %w", ref, err)
	}
	if err := build(ctx, cli, ref, files, []string{"LABEL " + StandInLabel + "=1"}); err != nil {
		return StandIn{}, err
	}
	return StandIn{Ref: ref, Created: true}, nil
}

// Remove deletes the stand-in image when EnsureStandIn built it.
func (s StandIn) Remove(ctx context.Context, cli client.APIClient) error {
	if !s.Created {
		return nil
	}
	if _, err := cli.ImageRemove(ctx, s.Ref, image.RemoveOptions{Force: true}); err != nil {
		return fmt.Errorf("removing stand-in image %s: %w", s.Ref, err)
	}
	return nil
}

func build(ctx context.Context, cli client.APIClient, ref string, files map[string]string, changes []string) error {
	layer, err := layer(BusyboxPath, files)
	if err != nil {
		return err
	}
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: bytes.NewReader(layer), SourceName: "-"}, ref,
		image.ImportOptions{
			Message: "hookrun test image (busybox-static)",
			Changes: append([]string{`ENV PATH=/bin`, `CMD ["/bin/sh"]`, `WORKDIR /`}, changes...),
		})
	if err != nil {
		return fmt.Errorf("importing image %s: %w", ref, err)
	}
	defer rc.Close()
	out, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("importing image %s: %w", ref, err)
	}
	if bytes.Contains(out, []byte(`"error"`)) {
		return fmt.Errorf("importing image %s: %s", ref, strings.TrimSpace(string(out)))
	}
	return nil
}

// Leftovers lists the containers labelled hookrun.run (any state), as
// "id name run=<id>" lines.
func Leftovers(ctx context.Context, cli client.APIClient) ([]string, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "hookrun.run"))})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	var out []string
	for _, c := range list {
		out = append(out, fmt.Sprintf("%.12s %v run=%s", c.ID, c.Names, c.Labels["hookrun.run"]))
	}
	return out, nil
}

// Layer returns the image's root filesystem as an uncompressed tar.
func Layer(busybox string) ([]byte, error) { return layer(busybox, nil) }

func layer(busybox string, extra map[string]string) ([]byte, error) {
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, fmt.Errorf("reading %s (install busybox-static): %w", busybox, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	dirs := []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"tmp/", 0o1777}, {"workspace/", 0o777}, {"etc/", 0o755}, {"root/", 0o700}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: mtime}); err != nil {
			return nil, fmt.Errorf("writing layer: %w", err)
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"bin/busybox", 0o755, bin},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/bin/false\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
	names := make([]string, 0, len(extra))
	for name := range extra {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		files = append(files, struct {
			name string
			mode int64
			data []byte
		}{name, 0o644, []byte(extra[name])})
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime}); err != nil {
			return nil, fmt.Errorf("writing layer: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("writing layer: %w", err)
		}
	}
	for _, a := range applets {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: mtime}); err != nil {
			return nil, fmt.Errorf("writing layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("writing layer: %w", err)
	}
	return buf.Bytes(), nil
}

// ErrNoDocker wraps a failure to reach the Docker daemon.
var ErrNoDocker = errors.New("docker daemon unreachable")

// Client returns a client for the daemon DOCKER_HOST points at, with API
// version negotiation, after checking that the daemon answers.
func Client(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("creating docker client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: %w", ErrNoDocker, err)
	}
	return cli, nil
}
