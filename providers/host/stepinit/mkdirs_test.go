package stepinit

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestMkdirs: mkdirs makes a directory and its missing parents, accepts
// one that exists, and refuses a path whose place a file takes, as
// os.MkdirAll does.
func TestMkdirs(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	if err := mkdirs(deep); err != nil {
		t.Fatalf("mkdirs(%s): %v", deep, err)
	}
	if fi, err := os.Stat(deep); err != nil || !fi.IsDir() {
		t.Fatalf("%s after mkdirs: %v", deep, err)
	}
	if err := mkdirs(filepath.Join(root, "a", "b")); err != nil {
		t.Fatalf("mkdirs of a directory that exists: %v", err)
	}
	if err := mkdirs(filepath.Join(root, "a", "d")); err != nil {
		t.Fatalf("mkdirs beside one: %v", err)
	}
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(file, "below")} {
		var pe *os.PathError
		if err := mkdirs(p); err == nil || !errors.As(err, &pe) {
			t.Fatalf("mkdirs(%s) = %v, want a *os.PathError", p, err)
		}
	}
}
