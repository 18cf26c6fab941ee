package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hookrun.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadConfigExpandsEnvAsData(t *testing.T) {
	p := writeConfig(t, `
listen: 127.0.0.1:9999
github: { webhook_secret: "${GH_SECRET}", token: "${GH_TOKEN}" }
gitlab: { webhook_token: "prefix-${GL}-suffix" }
api: { token: "${MISSING}" }
runner: { concurrency: 8, default_timeout: 90m }
`)
	c, err := loadConfig(p, envMap(map[string]string{"GH_SECRET": "a: b # not a comment", "GH_TOKEN": "tok", "GL": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.GitHub.WebhookSecret != "a: b # not a comment" {
		t.Errorf("secret = %q: an expanded value must stay data", c.GitHub.WebhookSecret)
	}
	if c.GitLab.WebhookToken != "prefix-x-suffix" || c.GitHub.Token != "tok" || c.API.Token != "" {
		t.Errorf("expansion wrong: %+v %+v %+v", c.GitLab, c.GitHub, c.API)
	}
	if c.Runner.DefaultTimeout != 90*time.Minute {
		t.Errorf("runner.default_timeout = %s, want the file's 90m", c.Runner.DefaultTimeout)
	}
	if c.Listen != "127.0.0.1:9999" || c.Runner.Concurrency != 8 || c.DataDir != "./.hookrun" || c.NATS.Replicas != 1 {
		t.Errorf("values or defaults wrong: %+v", c)
	}
}

func TestLoadConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"unknown key", "listen: 127.0.0.1:1\nrunner:\n  concurency: 3\n", "line 3: field concurency not found"},
		{"bad concurrency", "runner: { concurrency: -1 }\n", "runner.concurrency: must be between 1 and 1024"},
		{"bad level", "log: { level: loud }\n", "log.level"},
		{"replicas on embedded", "nats: { replicas: 3 }\n", "nats.replicas"},
		{"sync on an external cluster", "nats: { url: 'nats://a:4222', sync: always }\n", "nats.sync: is the embedded server's setting"},
		{"bad sync", "nats: { sync: often }\n", `nats.sync: want "always" or a positive duration`},
		{"insecure_no_auth without listen", "nats: { insecure_no_auth: true }\n", "nats.insecure_no_auth: applies only to the embedded server's nats.listen"},
		{"insecure_no_auth on an external cluster", "nats: { url: 'nats://a:4222', insecure_no_auth: true }\n", "nats.insecure_no_auth: applies only"},
		{"insecure_no_auth with a password", "nats: { listen: '127.0.0.1:4222', insecure_no_auth: true, password_file: /p }\n", "nats.insecure_no_auth: cannot be combined"},
		{"password and password_file", "nats: { url: 'nats://a:4222', password: x, password_file: /p }\n", "nats.password: set password or password_file, not both"},
		{"creds_file and password", "nats: { url: 'nats://a:4222', creds_file: /c, password: x }\n", "nats.creds_file: cannot be combined"},
		{"app without key", "github: { app_id: 12 }\n", "github.private_key_file"},
		{"bad trusted proxy", "api: { trusted_proxies: [10.0.0.0/8, 'proxy.example'] }\n", `api.trusted_proxies[1]: want a CIDR such as 10.0.0.0/8 or an IP address, got "proxy.example"`},
		{"wrong type", "runner: { concurrency: many }\n", "cannot unmarshal"},
		{"negative default timeout", "runner: { default_timeout: -1m }\n", "runner.default_timeout: must not be negative"},
		{"negative outbox backoff", "runner: { report_outbox: { poll: 1s, backoff: -1s } }\n", "runner.report_outbox.backoff: must not be negative"},
		{"short retention", "runs: { retention: 10m }\n", "runs.retention: must be at least 1h"},
		{"bad sweep interval", "runs: { sweep_interval: 1ms }\n", "runs.sweep_interval: must be at least 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(writeConfig(t, tc.body), envMap(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadConfigEmptyPathIsDefaults(t *testing.T) {
	c, err := loadConfig("", envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8080" || c.Workflows != "./workflows" || c.Runner.Concurrency != 4 {
		t.Fatalf("defaults wrong: %+v", c)
	}
	if c.Runner.DefaultTimeout != time.Hour {
		t.Errorf("runner.default_timeout defaults to %s, want 1h", c.Runner.DefaultTimeout)
	}
	if c.Runs.Retention != 30*24*time.Hour || c.Runs.SweepInterval != time.Hour {
		t.Errorf("runs.retention, runs.sweep_interval default to %s, %s; want 720h, 1h", c.Runs.Retention, c.Runs.SweepInterval)
	}
}
