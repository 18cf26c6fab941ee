package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hookrun/hookrun/runner/contract"
)

// mountExt4 makes a 256 MiB ext4 file system with mkfs.ext4's options,
// mounts it and returns where.
func mountExt4(t *testing.T, mkfsOptions ...string) string {
	t.Helper()
	return mountExt4With(t, "loop", mkfsOptions...)
}

// mountExt4With is mountExt4 with mount's options (loop among them).
func mountExt4With(t *testing.T, mountOptions string, mkfsOptions ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("mounting file systems needs root; run the tests as root (CI does)")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Fatal("mkfs.ext4 is missing: make tools installs e2fsprogs")
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "fs.img")
	if out, err := exec.Command("truncate", "-s", "256M", img).CombinedOutput(); err != nil {
		t.Fatalf("truncate: %v: %s", err, out)
	}
	args := append([]string{"-q", "-F"}, append(mkfsOptions, img)...)
	if out, err := exec.Command(mkfs, args...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-o", mountOptions, img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	return mnt
}

// TestUnjournaledExt4 makes ext4 file systems with and without a journal,
// mounts them with and without discard, and wants only those without a
// journal named, with discard as mounted; then reads a made-up mount
// table.
func TestUnjournaledExt4(t *testing.T) {
	for _, c := range []struct {
		features, mountOptions string
		unjournaled, discard   bool
	}{
		{"^has_journal", "loop", true, false},
		{"^has_journal", "loop,discard", true, true},
		{"has_journal", "loop", false, false},
		{"has_journal", "loop,discard", false, false},
	} {
		data := filepath.Join(mountExt4With(t, c.mountOptions, "-O", c.features), "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		dev, discard := UnjournaledExt4(data)
		if (dev != "") != c.unjournaled || discard != c.discard {
			t.Errorf("-O %s, mounted -o %s: device %q, discard %v; want without a journal %v, discard %v",
				c.features, c.mountOptions, dev, discard, c.unjournaled, c.discard)
		}
	}
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "mountinfo"), []byte(
		"22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"+
			"30 22 0:40 / /srv/tmp\\040fs rw - tmpfs tmpfs rw\n"+
			"31 22 254:16 / /srv/data rw,relatime - ext4 /dev/vdb rw,discard,errors=remount-ro\n"+
			"32 22 7:0 / /srv/loop rw,relatime - ext4 /dev/loop0 rw,discard\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ext4/vda", "ext4/vdb", "ext4/loop0", "jbd2/loop0-8"} {
		if err := os.MkdirAll(filepath.Join(tmp, "procfs", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	type want struct {
		dev     string
		discard bool
	}
	for dir, w := range map[string]want{
		"/var/lib/hookrun":  {"/dev/vda", false},
		"/srv/tmp fs/data":  {"", false},
		"/srv/tmp":          {"/dev/vda", false},
		"/srv/data/hookrun": {"/dev/vdb", true},
		"/srv/loop/hookrun": {"", false}, // journaled: its discards wait for the commit
	} {
		dev, discard := unjournaledExt4(dir, filepath.Join(tmp, "mountinfo"), filepath.Join(tmp, "procfs"))
		if dev != w.dev || discard != w.discard {
			t.Errorf("%s: %q, discard %v; want %q, %v", dir, dev, discard, w.dev, w.discard)
		}
	}
}

// TestRunDirsSpreadOnUnjournaledExt4 makes ext4 file systems of 8 MiB
// block groups without flex groups and puts data_dir three levels down,
// so in one group with its parents (where, on a real machine, /tmp's or
// /var/lib's other files come and go). Without a journal it wants a run's
// directories in another group and the shards of workspaces and scratch
// spread over several, also when workspaces and scratch were made before
// (by a hookrun without shards); with a journal, all in data_dir's group
// as before.
func TestRunDirsSpreadOnUnjournaledExt4(t *testing.T) {
	for _, c := range []struct {
		name     string
		features string
		before   bool // workspaces and scratch made before New
		spread   bool
	}{
		{"no journal", "^has_journal,^flex_bg", false, true},
		{"no journal, made before", "^has_journal,^flex_bg", true, true},
		{"journal", "has_journal,^flex_bg", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mnt := mountExt4(t, "-O", c.features, "-g", "8192")
			perGroup := inodesPerGroup(t, filepath.Join(filepath.Dir(mnt), "fs.img"))
			group := func(p string) uint64 {
				t.Helper()
				var st syscall.Stat_t
				if err := syscall.Stat(p, &st); err != nil {
					t.Fatal(err)
				}
				return (st.Ino - 1) / perGroup
			}
			data := filepath.Join(mnt, "srv", "hookrun", "data")
			if c.before {
				for _, d := range []string{"workspaces", "scratch"} {
					if err := os.MkdirAll(filepath.Join(data, d), 0o755); err != nil {
						t.Fatal(err)
					}
				}
			} else if err := os.MkdirAll(data, 0o755); err != nil {
				t.Fatal(err)
			}
			w, err := New(Config{DataDir: data})
			if err != nil {
				t.Fatal(err)
			}
			ws, err := w.Prepare(context.Background(), "r1", nil, contract.PrepareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			home := group(data)
			for _, d := range []string{ws.Dir, ws.Home, ws.TmpDir, ws.Results} {
				if g := group(d); (g != home) != c.spread {
					t.Errorf("%s in block group %d, data_dir in %d: want spread %v", strings.TrimPrefix(d, data), g, home, c.spread)
				}
			}
			for _, parent := range []string{"workspaces", "scratch"} {
				groups := map[uint64]bool{}
				for i := range runShards {
					groups[group(filepath.Join(data, parent, shardName(i)))] = true
				}
				if spread := len(groups) >= runShards/2 && !groups[home]; spread != c.spread {
					t.Errorf("the %d shards of %s lie in %d block groups (data_dir's among them: %v): want spread %v",
						runShards, parent, len(groups), groups[home], c.spread)
				}
			}
			if err := w.Remove("r1"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// inodesPerGroup reads an ext4 image's inodes per block group.
func inodesPerGroup(t *testing.T, img string) uint64 {
	t.Helper()
	out, err := exec.Command("dumpe2fs", "-h", img).CombinedOutput()
	if err != nil {
		t.Fatalf("dumpe2fs: %v: %s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "Inodes per group:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("dumpe2fs -h: no inodes per group in %s", out)
	return 0
}
