package engine_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/hookrun/hookrun/"

// TestEngineImportsNoQueue: the engine and everything of this module it
// imports, directly or not, import neither the queue nor anything under
// internal/ (the composition root's tree): the engine runs without a queue
// (`hookrun run`), and the runner hands it what it needs of one through
// small interfaces.
func TestEngineImportsNoQueue(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // package → the package that imports it
	var walk func(pkg string)
	walk = func(pkg string) {
		for _, imp := range imports(t, filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(pkg, module)))) {
			if !strings.HasPrefix(imp, module) || seen[imp] != "" {
				continue
			}
			seen[imp] = pkg
			walk(imp)
		}
	}
	walk(module + "runner/engine")
	for imp, by := range seen {
		rel := strings.TrimPrefix(imp, module)
		if rel == "queue" || strings.HasPrefix(rel, "queue/") || strings.HasPrefix(rel, "internal/") {
			t.Errorf("the engine depends on %s (imported by %s)", imp, by)
		}
	}
	if len(seen) == 0 {
		t.Fatal("found no import of this module: the walk is broken")
	}
}

// imports lists what the non-test Go files in dir import.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.Imports {
			p, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}
