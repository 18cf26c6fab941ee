package docker

import (
	"strings"
	"testing"
)

// TestBinds covers volume parsing, workspace resolution and the socket rule
// without an engine (New does not contact it).
func TestBinds(t *testing.T) {
	const ws = "/srv/hookrun/ws/run1"
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
		{"relative escape to the socket", []string{"../../../../../var/run/docker.sock:/s"}, false, nil, "Docker socket"},
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
			got, err := d.binds(tt.volumes, ws)
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
