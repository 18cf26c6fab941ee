package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hookrun/hookrun/queue"
)

// TestComposeFileIsValid: `docker-compose config` accepts docker-compose.yml
// and it has the topology the docs promise.
func TestComposeFileIsValid(t *testing.T) {
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Skip("!!! docker-compose is not installed: the compose file is NOT checked !!!")
	}
	cmd := exec.Command(bin, "-f", "../../docker-compose.yml", "config")
	cmd.Env = append(os.Environ(), "GITHUB_WEBHOOK_SECRET=x", "HOOKRUN_REQUEST_KEY=compose-check-request-key-0123456789")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	for _, svc := range []string{"nats-1:", "nats-2:", "nats-3:", "ingress-1:", "ingress-2:", "runner-1:", "runner-2:", "/var/run/docker.sock"} {
		if !strings.Contains(string(out), svc) {
			t.Errorf("compose config lacks %q", svc)
		}
	}

	// Each runner's data_dir is a host directory mounted at the same path
	// (the host's Docker daemon resolves the workspaces it bind-mounts into
	// step containers on the host), and the images are the environment's.
	const data = "/srv/hookrun-compose-check"
	cmd = exec.Command(bin, "-f", "../../docker-compose.yml", "config")
	cmd.Env = append(os.Environ(), "GITHUB_WEBHOOK_SECRET=x", "HOOKRUN_REQUEST_KEY=compose-check-request-key-0123456789", "HOOKRUN_DATA_DIR="+data, "HOOKRUN_IMAGE=hr-img:1", "NATS_IMAGE=nats-img:1")
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	var cfg struct {
		Services map[string]struct {
			Image   string   `yaml:"image"`
			Command []string `yaml:"command"`
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("parsing docker-compose config: %v\n%s", err, out)
	}
	for name, svc := range cfg.Services {
		want := "hr-img:1"
		if strings.HasPrefix(name, "nats-") {
			want = "nats-img:1"
		}
		if svc.Image != want {
			t.Errorf("%s runs image %q, want %q from the environment", name, svc.Image, want)
		}
	}
	for _, name := range []string{"runner-1", "runner-2"} {
		svc := cfg.Services[name]
		dir := data + "/" + name
		if cmdline := strings.Join(svc.Command, " "); !strings.Contains(cmdline, "--data-dir "+dir) {
			t.Errorf("%s command %q lacks --data-dir %s", name, cmdline, dir)
		}
		mounted := false
		for _, v := range svc.Volumes {
			mounted = mounted || strings.HasPrefix(v, dir+":"+dir+":") || v == dir+":"+dir
		}
		if !mounted {
			t.Errorf("%s volumes %q: want %s mounted from the host at the same path", name, svc.Volumes, dir)
		}
	}
}

// TestComposeNATSConfigSyncsAsTheEmbeddedServer: a nats-server started with
// the compose nodes' configuration (deploy/nats.conf, which docker-compose.yml
// mounts on every node) runs JetStream with the store sync that hookrun's
// embedded server uses by default (nats.sync), read back from the server's
// own monitoring endpoint.
func TestComposeNATSConfigSyncsAsTheEmbeddedServer(t *testing.T) {
	compose, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(compose), "./deploy/nats.conf:/etc/nats/nats.conf:ro"); n != 3 {
		t.Fatalf("docker-compose.yml mounts deploy/nats.conf on %d nodes, want 3", n)
	}
	bin := buildNATSServer(t)
	client, mon := freeAddr(t), freeAddr(t)
	_, port := splitHostPort(t, client)
	_, mport := splitHostPort(t, mon)
	cmd := exec.Command(bin, "-c", "../../deploy/nats.conf", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", port, "-m", mport)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var varz struct {
		JetStream struct {
			Config *struct {
				SyncInterval time.Duration `json:"sync_interval"`
				SyncAlways   bool          `json:"sync_always"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	waitFor(t, 20*time.Second, func() bool {
		resp, err := http.Get("http://" + mon + "/varz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&varz) == nil && varz.JetStream.Config != nil
	})
	always, every, err := queue.ParseSync(queue.DefaultSync)
	if err != nil {
		t.Fatal(err)
	}
	if got := varz.JetStream.Config; got.SyncAlways != always || got.SyncInterval != every {
		t.Fatalf("node store: sync always %v every %v; the embedded default %q is always %v every %v\n%s",
			got.SyncAlways, got.SyncInterval, queue.DefaultSync, always, every, out.String())
	}
}
