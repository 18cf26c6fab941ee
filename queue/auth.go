package queue

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// passwordBytes is the entropy of a generated password (hex-encoded, so
// that it needs no escaping in a route URL or a YAML file).
const passwordBytes = 32

// clientPassword is the password this process presents to an external
// cluster: Config.Password, or the content of Config.PasswordFile; "" when
// neither is set. The error names the file, never its content.
func clientPassword(cfg Config) (string, error) {
	if cfg.PasswordFile == "" {
		return cfg.Password, nil
	}
	b, err := os.ReadFile(cfg.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("reading nats password file: %w", err)
	}
	pw := strings.TrimSpace(string(b))
	if pw == "" {
		return "", fmt.Errorf("reading nats password file %s: it is empty", cfg.PasswordFile)
	}
	return pw, nil
}

// serverPassword is the password the embedded server requires on its TCP
// ports: Config.Password, or the content of Config.PasswordFile, which is
// created with a random password (mode 0600) when it does not exist yet.
// Nodes of an embedded cluster that share the file and start at once
// agree on one password: the file appears complete or not at all (a hard
// link of a finished temporary file), and a node that loses the race
// reads the winner's.
func serverPassword(cfg Config, log *slog.Logger) (string, error) {
	if cfg.Password != "" {
		return cfg.Password, nil
	}
	path := cfg.PasswordFile
	pw, err := readServerPassword(path, log)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return pw, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("creating nats password file: %w", err)
	}
	raw := make([]byte, passwordBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generating nats password: %w", err)
	}
	pw = hex.EncodeToString(raw)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".nats-password-*") // mode 0600
	if err != nil {
		return "", fmt.Errorf("creating nats password file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(pw + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing nats password file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing nats password file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("writing nats password file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readServerPassword(path, log)
		}
		return "", fmt.Errorf("creating nats password file: %w", err)
	}
	log.Info("generated the embedded nats server's password", "password_file", path)
	return pw, nil
}

// readServerPassword reads an existing password file of the embedded
// server and warns when users other than its owner may read it.
func readServerPassword(path string, log *slog.Logger) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("reading nats password file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		log.Warn("the embedded nats server's password file is readable by other users than its owner; chmod 600 it",
			"password_file", path, "mode", fmt.Sprintf("%#o", info.Mode().Perm()))
	}
	return clientPassword(Config{PasswordFile: path})
}

// withUserInfo is a route URL carrying user and password, unless it
// already names a user of its own.
func withUserInfo(u *url.URL, user, password string) *url.URL {
	if u.User != nil {
		return u
	}
	c := *u
	c.User = url.UserPassword(user, password)
	return &c
}
