package app

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookrun/hookrun/queue"
)

// RequestKeyFile is the request key `hookrun serve` generates in data_dir
// when the configuration names none (runs.request_key, runs.request_key_file).
const RequestKeyFile = "request.key"

// errRequestKeyRequired: a mode whose halves meet on an external NATS has
// no key configured. Ingress and runners must share one.
var errRequestKeyRequired = errors.New("runs.request_key: required (or runs.request_key_file) for `hookrun ingress` and `hookrun runner`: " +
	"ingress authenticates every run request with it and runners run only what it authenticated, so every ingress and runner must have the same key " +
	"(at least 32 characters, e.g. `openssl rand -hex 32`; docs/operations.md, \"Run requests are authenticated\")")

// requestKey is the key of run-request authenticators (queue/request.go):
// runs.request_key, else the contents of runs.request_key_file, else, for
// a mode that runs both halves (serve), the key in data_dir, generated at
// the first start (mode 0600). The key itself is never logged.
func requestKey(c *Config, m Mode, logger *slog.Logger) ([]byte, error) {
	switch {
	case c.Runs.RequestKey != "":
		return []byte(c.Runs.RequestKey), nil
	case c.Runs.RequestKeyFile != "":
		return readRequestKey(c.Runs.RequestKeyFile)
	case m.ExternalNATS:
		return nil, errRequestKeyRequired
	}
	path := filepath.Join(c.DataDir, RequestKeyFile)
	key, err := readRequestKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("generating the request key: %w", err)
	}
	key = []byte(hex.EncodeToString(raw[:]))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readRequestKey(path) // another start made it meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("storing the request key: %w", err)
	}
	_, werr := f.Write(append(key, '\n'))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("storing the request key: %w", err)
	}
	logger.Info("generated the key that authenticates run requests", "file", path)
	return key, nil
}

// readRequestKey reads a key file: its contents without surrounding
// white space, at least queue.MinRequestKey bytes. A file others can read
// is refused.
func readRequestKey(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading the request key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("reading the request key: %s is accessible to others (mode %04o); chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the request key: %w", err)
	}
	key := []byte(strings.TrimSpace(string(data)))
	if len(key) < queue.MinRequestKey {
		return nil, fmt.Errorf("reading the request key: %s holds %d bytes, want at least %d", path, len(key), queue.MinRequestKey)
	}
	return key, nil
}
