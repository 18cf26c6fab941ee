package docker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinds covers volume parsing, workspace resolution and the socket rule
// without an engine (New does not contact it).
func TestBinds(t *testing.T) {
	ws := t.TempDir()
	tests := []struct {
		name    string
		volumes []string
		allow   bool
		want    []string
		wantErr string
	}{
		{"no volumes: the workspace", nil, false, []string{ws + ":/workspace"}, ""},
		{"relative, dot", []string{".:/src"}, false, []string{ws + ":/src", ws + ":/workspace"}, ""},
		{"relative, bare name is a path", []string{"cache:/cache:ro"}, false, []string{ws + "/cache:/cache:ro", ws + ":/workspace"}, ""},
		{"relative, nested", []string{"./a/../b:/b"}, false, []string{ws + "/b:/b", ws + ":/workspace"}, ""},
		{"targets the workspace", []string{"./sub:/workspace/"}, false, []string{ws + "/sub:/workspace"}, ""},
		{"absolute", []string{"/etc/ssl/certs:/etc/ssl/certs:ro"}, false, []string{"/etc/ssl/certs:/etc/ssl/certs:ro", ws + ":/workspace"}, ""},
		{"socket", []string{"/var/run/docker.sock:/var/run/docker.sock"}, false, nil, "Docker socket"},
		{"socket, other name inside", []string{"/run/docker.sock:/x"}, false, nil, "Docker socket"},
		{"podman socket", []string{"/run/user/1000/podman/podman.sock:/x"}, false, nil, "Docker socket"},
		{"parent of the socket", []string{"/run:/host-run:ro"}, false, nil, "Docker socket"},
		{"host root", []string{"/:/host"}, false, nil, "Docker socket"},
		{"relative escape to the socket", []string{"../../../../../var/run/docker.sock:/s"}, false, nil, "leaves the workspace"},
		{"relative escape", []string{"../x:/x"}, false, nil, `volume "../x:/x": host path leaves the workspace`},
		{"socket allowed", []string{"/var/run/docker.sock:/var/run/docker.sock"}, true, []string{"/var/run/docker.sock:/var/run/docker.sock", ws + ":/workspace"}, ""},
		{"no container path", []string{"/data"}, false, nil, "want host:container"},
		{"relative container path", []string{"/data:data"}, false, nil, "not absolute"},
		{"too many parts", []string{"/a:/b:ro:x"}, false, nil, "want host:container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := New(Config{AllowDockerSocket: tt.allow})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			got, release, err := d.binds("binds-test", tt.volumes, ws)
			release()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("binds(%q) = %q, %v; want error %q", tt.volumes, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("binds(%q) = %q, want %q", tt.volumes, got, tt.want)
			}
		})
	}
}

func TestInsideDir(t *testing.T) {
	tests := []struct{ dir, def, want string }{
		{"", "/workspace", "/workspace"},
		{"", "/app", "/app"},
		{"sub/dir", "/app", "/workspace/sub/dir"},
		{"/abs/", "/app", "/abs"},
	}
	for _, tt := range tests {
		if got := insideDir(tt.dir, tt.def); got != tt.want {
			t.Errorf("insideDir(%q, %q) = %q, want %q", tt.dir, tt.def, got, tt.want)
		}
	}
}

// TestResolveInWorkspace: a relative volume source follows symlinks that
// stay inside the workspace, and is refused when one leads out of it
// (issue 24 point 1); nothing is created outside.
func TestResolveInWorkspace(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	mkdir := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	mkdir(filepath.Join(ws, "data", "sub"))
	mkdir(filepath.Join(ws, "etc")) // what an in-root resolution of /etc would find
	if err := os.WriteFile(filepath.Join(ws, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link("data/sub", "inside")                        // relative, within: followed
	link("../../data", "data/sub/up")                 // climbs, stays within: followed
	link("nothere", "dangling")                       // within, missing: created within
	link("/etc", "hostetc")                           // absolute, outside
	link(ws+"/data", "absinside")                     // absolute, even to inside: the host's path is not the workspace's
	link("../../../../../../../../"+outside, "climb") // relative, climbing out
	link(outside, "outside")                          // to an existing folder outside
	link(filepath.Join(outside, "new"), "outsidenew") // to a missing path outside: never created
	link("outside/deeper", "viaoutside")              // through a link that leads out

	tests := []struct {
		rel, want string // "": refused as leaving the workspace; "!": refused
	}{
		{".", ws},
		{"data", ws + "/data"},
		{"./data/./sub/", ws + "/data/sub"},
		{"inside", ws + "/data/sub"},
		{"data/sub/up/sub", ws + "/data/sub"},
		{"file", ws + "/file"},
		{"fresh/a/b", ws + "/fresh/a/b"},
		{"dangling", "!"},
		{"hostetc", ""},
		{"absinside", ""},
		{"climb", ""},
		{"outside", ""},
		{"outsidenew", "!"},
		{"viaoutside", "!"},
		{"..", ""},
		{"../x", ""},
		{"data/../../x", ""},
	}
	for _, tt := range tests {
		got, err := resolveInWorkspace(ws, tt.rel)
		if tt.want == "!" {
			if err == nil {
				t.Errorf("resolveInWorkspace(%q) = %q; want an error", tt.rel, got)
			}
			continue
		}
		if tt.want == "" {
			if !errors.Is(err, errLeavesWorkspace) {
				t.Errorf("resolveInWorkspace(%q) = %q, %v; want %v", tt.rel, got, err, errLeavesWorkspace)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("resolveInWorkspace(%q) = %q, %v; want %q", tt.rel, got, err, tt.want)
		}
	}
	for _, p := range []string{filepath.Join(outside, "new"), filepath.Join(outside, "deeper"), filepath.Join(ws, "nothere")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v; a dangling symlink's target was created", p, err)
		}
	}
}
