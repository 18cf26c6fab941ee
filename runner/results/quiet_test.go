package results

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

const oneFinding = "{\"message\": \"m\"}\n"

// findings is how many findings r holds after a Scan.
func findings(t *testing.T, r *Reader) int {
	t.Helper()
	if err := r.Scan(); err != nil {
		t.Fatal(err)
	}
	res := r.Results()
	if res == nil {
		return 0
	}
	return len(res.Findings)
}

// quietReader is a reader of a new empty folder that its first Scan
// marked quiet; it fails the test on a filesystem that is not trusted.
func quietReader(t *testing.T) (*Reader, string) {
	t.Helper()
	dir := t.TempDir()
	r := NewReader(dir, Options{})
	if n := findings(t, r); n != 0 {
		t.Fatalf("an empty folder holds %d findings", n)
	}
	if r.quiet == nil {
		var fs unix.Statfs_t
		_ = unix.Statfs(dir, &fs)
		t.Fatalf("an empty folder on filesystem %#x was not marked quiet", fs.Type)
	}
	return r, dir
}

// TestQuietSkipsTheListing: an empty folder the last Scan marked is not
// listed again while unchanged, and its mark is its modification time
// set apart from its change time, nothing else.
func TestQuietSkipsTheListing(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o710); err != nil {
		t.Fatal(err)
	}
	var before, st unix.Stat_t
	if err := unix.Lstat(dir, &before); err != nil {
		t.Fatal(err)
	}
	r := NewReader(dir, Options{})
	if n := findings(t, r); n != 0 || r.quiet == nil {
		t.Fatalf("an empty folder: %d findings, quiet %v", n, r.quiet != nil)
	}
	if err := unix.Lstat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode != before.Mode || st.Uid != before.Uid || st.Gid != before.Gid {
		t.Errorf("mode %o, owner %d:%d after the mark; before %o, %d:%d", st.Mode, st.Uid, st.Gid, before.Mode, before.Uid, before.Gid)
	}
	if st.Mtim == st.Ctim {
		t.Errorf("modification time %v is the change time", st.Mtim)
	}
	if !r.stillQuiet() {
		t.Fatal("an unchanged marked folder is not quiet")
	}
	if n := findings(t, r); n != 0 || r.quiet == nil {
		t.Errorf("a second Scan: %d findings, quiet %v", n, r.quiet != nil)
	}
}

// TestQuietSeesWhatIsMadeAtOnce: whatever is made in a marked folder right
// after a Scan, within the same tick of the clock, is read by the next
// one, also when the folder's modification time is put back to the mark's.
func TestQuietSeesWhatIsMadeAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string)
	}{
		{"file", func(t *testing.T, dir string) { writeFile(t, dir, "a.rdjsonl", oneFinding) }},
		{"file in a new directory", func(t *testing.T, dir string) { writeFile(t, dir, "lint/deep/a.rdjsonl", oneFinding) }},
		{"file renamed in", func(t *testing.T, dir string) {
			tmp := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".tmp")
			if err := os.WriteFile(tmp, []byte(oneFinding), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, "a.rdjsonl")); err != nil {
				t.Fatal(err)
			}
		}},
		{"mtime put back", func(t *testing.T, dir string) {
			var st unix.Stat_t
			if err := unix.Lstat(dir, &st); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "a.rdjsonl", oneFinding)
			if err := unix.UtimesNanoAt(unix.AT_FDCWD, dir, []unix.Timespec{st.Atim, st.Mtim}, 0); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 50 {
				r, dir := quietReader(t)
				tc.make(t, dir)
				if n := findings(t, r); n != 1 {
					t.Fatalf("%d findings after the change, want 1", n)
				}
			}
		})
	}
}

// TestQuietAgain: a folder emptied by a step is marked again, and what is
// then made in it is read; a folder replaced by another one is listed.
func TestQuietAgain(t *testing.T) {
	r, dir := quietReader(t)
	writeFile(t, dir, "a.rdjsonl", oneFinding)
	if n := findings(t, r); n != 1 || r.quiet != nil {
		t.Fatalf("%d findings, quiet %v; want 1, not quiet", n, r.quiet != nil)
	}
	if err := os.Remove(filepath.Join(dir, "a.rdjsonl")); err != nil {
		t.Fatal(err)
	}
	if n := findings(t, r); n != 0 || r.quiet == nil {
		t.Fatalf("emptied: %d findings, quiet %v; want 0, quiet", n, r.quiet != nil)
	}
	writeFile(t, dir, "b.rdjsonl", oneFinding+oneFinding)
	if n := findings(t, r); n != 2 {
		t.Fatalf("%d findings after the second file, want 2", n)
	}

	r, dir = quietReader(t)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "c.rdjsonl", oneFinding)
	if n := findings(t, r); n != 1 {
		t.Fatalf("%d findings in the folder made anew, want 1", n)
	}
}

// TestQuietWhileStepsWrite: steps of a graph end (and the folder is
// scanned, found empty and marked) while others make and remove files;
// once every writer is done, the next Scan has read what is left.
func TestQuietWhileStepsWrite(t *testing.T) {
	dir := t.TempDir()
	r := NewReader(dir, Options{})
	const writers, rounds = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			name := filepath.Join(dir, "w"+strconv.Itoa(w)+".rdjsonl")
			for range rounds {
				if err := os.WriteFile(name, []byte(oneFinding), 0o644); err != nil {
					t.Error(err)
				}
				if err := r.Scan(); err != nil {
					t.Error(err)
				}
				if err := os.Remove(name); err != nil {
					t.Error(err)
				}
				if err := r.Scan(); err != nil {
					t.Error(err)
				}
			}
			if err := os.WriteFile(name, []byte(oneFinding), 0o644); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := findings(t, r); n != writers {
		t.Errorf("%d findings, want %d", n, writers)
	}
}
