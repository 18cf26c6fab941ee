package app

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The NATS password reaches no run: the configured one and the embedded
// server's generated file are masked in run logs, and a configured
// password_file is covered for isolated host steps (the generated one lies
// in data_dir, which is covered whole).
func TestNATSPasswordMaskedAndHidden(t *testing.T) {
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "nats"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "nats", "client.password"), []byte("generated-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := serverCredentials(&Config{DataDir: data}); !slices.Contains(got, "generated-pw") {
		t.Errorf("the embedded server's generated password is not masked: %q", got)
	}
	if got := serverCredentials(&Config{DataDir: data, NATS: NATSConfig{URL: "nats://a:4222", Password: "configured-pw"}}); !slices.Contains(got, "configured-pw") {
		t.Errorf("nats.password is not masked: %q", got)
	}
	pwFile := filepath.Join(t.TempDir(), "nats.password")
	if err := os.WriteFile(pwFile, []byte("file-pw"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{DataDir: data, NATS: NATSConfig{URL: "nats://a:4222", PasswordFile: pwFile}}
	if got := serverCredentials(cfg); !slices.Contains(got, "file-pw") {
		t.Errorf("the password of nats.password_file is not masked: %q", got)
	}
	if got := hiddenPaths(cfg); !slices.Contains(got, pwFile) {
		t.Errorf("nats.password_file is not hidden from host steps: %q", got)
	}
}
