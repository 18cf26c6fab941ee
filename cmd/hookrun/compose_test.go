package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestComposeFileIsValid: `docker-compose config` accepts docker-compose.yml
// and it has the topology the docs promise.
func TestComposeFileIsValid(t *testing.T) {
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Skip("!!! docker-compose is not installed: the compose file is NOT checked !!!")
	}
	cmd := exec.Command(bin, "-f", "../../docker-compose.yml", "config")
	cmd.Env = append(os.Environ(), "GITHUB_WEBHOOK_SECRET=x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	for _, svc := range []string{"nats-1:", "nats-2:", "nats-3:", "ingress-1:", "ingress-2:", "runner-1:", "runner-2:", "/var/run/docker.sock"} {
		if !strings.Contains(string(out), svc) {
			t.Errorf("compose config lacks %q", svc)
		}
	}
}
