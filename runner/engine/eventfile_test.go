package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/runner/engine"
	"github.com/hookrun/hookrun/runner/engine/enginetest"
)

// The event file lies outside the workspace: at RunSpec.EventFile, which
// the run leaves to whoever prepared it, or else in a file of the run's
// own in TMPDIR, readable by everyone, removed at its end with nothing
// else left there.
func TestEventFileOutsideTheWorkspace(t *testing.T) {
	w := enginetest.Parse(t, `
steps:
  - {id: show, output: P, run: 'cat "$HOOKRUN_EVENT_PATH" >/dev/null && echo "$HOOKRUN_EVENT_PATH"'}
  - {id: mode, output: M, run: 'stat -c %a "$HOOKRUN_EVENT_PATH"'}
`)
	for _, tc := range []struct {
		name      string
		eventFile string
	}{{"prepared event file", filepath.Join(t.TempDir(), "r1+event.json")}, {"a file of the run's own", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			sink := enginetest.NewMemSink()
			eng, err := engine.New(engine.Config{Providers: engine.Providers{Host: enginetest.HostExec()}, Logs: sink, LookupEnv: enginetest.Env(testEnv)})
			if err != nil {
				t.Fatal(err)
			}
			ws := t.TempDir()
			ev := samplePR()
			ev.Raw = []byte(`{"raw":"payload"}`)
			res := eng.Run(context.Background(), engine.RunSpec{ID: "r1", Workflow: w, Event: ev, Workspace: ws, EventFile: tc.eventFile})
			if res.Status != succeeded || len(res.Outputs) != 2 {
				t.Fatalf("run %s: %s\n%s", res.Status, res.Error, sink.All())
			}
			var p, mode string
			for _, o := range res.Outputs {
				switch o.Name {
				case "P":
					p = o.Value
				case "M":
					mode = o.Value
				}
			}
			if mode != "644" {
				t.Errorf("the event file's mode is %s, want 644 (readable by a step's user, writable by hookrun's alone)", mode)
			}
			if strings.HasPrefix(p, ws) {
				t.Errorf("HOOKRUN_EVENT_PATH %s lies in the workspace %s", p, ws)
			}
			if entries, _ := os.ReadDir(ws); len(entries) != 0 {
				t.Errorf("the workspace holds %v", entries)
			}
			_, err = os.ReadFile(p)
			switch {
			case tc.eventFile != "" && p != tc.eventFile:
				t.Errorf("HOOKRUN_EVENT_PATH = %s, want %s", p, tc.eventFile)
			case tc.eventFile != "" && err != nil:
				t.Errorf("the prepared event file is gone after the run: %v", err)
			case tc.eventFile == "" && !os.IsNotExist(err):
				t.Errorf("the run's own event file %s is still there after the run (%v)", p, err)
			case tc.eventFile == "" && filepath.Dir(p) != tmp:
				t.Errorf("the run's own event file %s is not a file of its own in TMPDIR %s", p, tmp)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
				t.Errorf("TMPDIR holds %v after the run", entries)
			}
		})
	}
}
