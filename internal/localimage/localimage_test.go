package localimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/docker/dockertest"
)

type entry struct {
	typ  byte
	mode int64
	link string
	size int64
}

func entries(t *testing.T, layer []byte) (map[string]entry, []string) {
	t.Helper()
	out := map[string]entry{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, order
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := out[h.Name]; dup {
			t.Errorf("entry %s written twice", h.Name)
		}
		out[h.Name] = entry{h.Typeflag, h.Mode, h.Linkname, h.Size}
		order = append(order, h.Name)
	}
}

// Parent directories come before what they hold, a path added twice keeps
// its first entry, /tmp keeps its sticky bit, and the first error sticks.
func TestLayer(t *testing.T) {
	l := NewLayer()
	l.File("/etc/nats/x.conf", 0o644, []byte("a"))
	l.File("/etc/nats/x.conf", 0o600, []byte("bb"))
	l.Dir("/tmp", 0o777|fs.ModeSticky)
	l.Symlink("/bin/sh", "busybox")
	b, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	got, order := entries(t, b)
	want := []string{"etc/", "etc/nats/", "etc/nats/x.conf", "tmp/", "bin/", "bin/sh"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("entries %v, want %v", order, want)
	}
	if e := got["etc/nats/x.conf"]; e.size != 1 || e.mode != 0o644 {
		t.Errorf("x.conf: %+v, want the first one (1 byte, 0644)", e)
	}
	if e := got["tmp/"]; e.mode != 0o1777 {
		t.Errorf("/tmp mode %o, want 1777", e.mode)
	}
	if e := got["bin/sh"]; e.typ != tar.TypeSymlink || e.link != "busybox" {
		t.Errorf("bin/sh: %+v", e)
	}

	bad := NewLayer()
	bad.HostFile(filepath.Join(t.TempDir(), "missing"), "/x")
	bad.File("/y", 0o644, nil)
	if _, err := bad.Bytes(); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Bytes after a failed HostFile: %v, want the read error", err)
	}
}

// The libraries of git are what ldd prints, the dynamic loader included;
// a static binary (busybox) needs none.
func TestLibraries(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	libs, err := Libraries(git, dockertest.BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	var loader, libc bool
	for _, l := range libs {
		loader = loader || strings.Contains(filepath.Base(l), "ld-linux")
		libc = libc || strings.HasPrefix(filepath.Base(l), "libc.so")
		if !filepath.IsAbs(l) {
			t.Errorf("library %q is not an absolute path", l)
		}
	}
	if !loader || !libc {
		t.Errorf("libraries of git %v: want the loader and libc", libs)
	}
	if static, err := Libraries(dockertest.BusyboxPath); err != nil || len(static) != 0 {
		t.Errorf("libraries of static busybox: %v %v, want none", static, err)
	}
}

// The hookrun image holds the binaries where the runner looks for them,
// a shell, git with its remote helper for http(s) and every library they
// load, at the paths the loader resolves.
func TestHookrunLayer(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, b := range []string{"hookrun", "hookrun-step-init"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	layer, err := HookrunLayer(filepath.Join(dir, "hookrun"), filepath.Join(dir, "hookrun-step-init"), dockertest.BusyboxPath, git)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := entries(t, layer)
	execPath, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	core := strings.TrimPrefix(strings.TrimSpace(string(execPath)), "/")
	for _, want := range []string{"usr/local/bin/hookrun", "usr/local/bin/hookrun-step-init", "bin/busybox", "bin/sh",
		strings.TrimPrefix(git, "/"), core + "/git-remote-http", "etc/passwd", "tmp/", "var/lib/hookrun/"} {
		if _, ok := got[want]; !ok {
			t.Errorf("layer lacks %s", want)
		}
	}
	if e := got["usr/local/bin/hookrun"]; e.mode&0o111 == 0 {
		t.Errorf("hookrun is not executable: %o", e.mode)
	}
	libs, err := Libraries(git, filepath.Join("/", core, "git-remote-http"))
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs {
		if e, ok := got[strings.TrimPrefix(lib, "/")]; !ok || e.typ != tar.TypeReg {
			t.Errorf("layer lacks the library %s as a file: %+v", lib, e)
		}
	}
}
