package workflows

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser. It must never panic; it
// returns either a workflow that matches, authorizes and marshals, or a
// non-empty Problems list. Seeds: every file under testdata and examples.
func FuzzParse(f *testing.F) {
	for _, root := range []string{"testdata", "../examples"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err == nil {
				f.Add(data)
			}
			return err
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	f.Add([]byte("a: &a [*a]\nsteps: *a\n"))
	f.Add([]byte("steps:\n  - &s {id: a, run: x}\n  - *s\n"))
	events := []*Event{
		ghPR("opened", "main", true),
		glMR("synchronize", "release/1"),
		comment(GitHub, "/deploy staging", true),
		comment(GitLab, "/review", false),
		push(GitHub, "main"),
		issue("opened", "bug"),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := Parse("fuzz.yaml", data)
		if err != nil {
			var ps Problems
			if !errors.As(err, &ps) || len(ps) == 0 {
				t.Fatalf("error %v is not a non-empty Problems", err)
			}
			for _, p := range ps {
				if p.File != "fuzz.yaml" || p.Msg == "" || p.Line < 0 || p.Col < 0 {
					t.Fatalf("bad problem %#v", p)
				}
			}
			if w != nil {
				t.Fatal("workflow returned with problems")
			}
			return
		}
		if w == nil || len(w.Steps) == 0 || w.Name == "" {
			t.Fatalf("accepted an incomplete workflow: %+v", w)
		}
		for _, e := range events {
			w.Match(e)
			w.Authorize(e)
		}
		if _, err := json.Marshal(w); err != nil {
			t.Fatalf("marshaling: %v", err)
		}
	})
}
