package git

import (
	"os"
	"path/filepath"
	"testing"
)

// New looks once for what earlier layouts left in the data dir, so that a
// data dir that holds none costs no failing system call per run.
func TestEarlierLayoutsFoundOnce(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant []string // directories made before New, under the data dir
		want  earlierLayouts
	}{
		{"a new data dir", nil, earlierLayouts{}},
		{"this layout's runs", []string{"workspaces/0/r1", "scratch/f/r1+home", "scratch/f/r1+results"}, earlierLayouts{}},
		{"an event file's own directory", []string{"scratch/c/r1+event"}, earlierLayouts{eventDirs: true}},
		{"a run left without shards", []string{"scratch/r1+tmp"}, earlierLayouts{flat: true}},
		{"a workspace left without shards", []string{"workspaces/r1"}, earlierLayouts{flat: true}},
		{"a run's own scratch directory", []string{"scratch/r1/home"}, earlierLayouts{flat: true}},
		{"a shard's name in capitals", []string{"workspaces/A"}, earlierLayouts{flat: true}},
		{"both", []string{"workspaces/r1", "scratch/a/r2+event"}, earlierLayouts{eventDirs: true, flat: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := t.TempDir()
			for _, d := range c.plant {
				if err := os.MkdirAll(filepath.Join(data, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			w, err := New(Config{DataDir: data})
			if err != nil {
				t.Fatal(err)
			}
			if w.earlier != c.want {
				t.Errorf("earlier layouts %+v, want %+v", w.earlier, c.want)
			}
		})
	}
}
