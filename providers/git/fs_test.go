package git

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestUnjournaledExt4 makes two ext4 file systems, one without a journal,
// mounts them, and wants only that one named.
func TestUnjournaledExt4(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("mounting file systems needs root; run the tests as root (CI does)")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Fatal("mkfs.ext4 is missing: make tools installs e2fsprogs")
	}
	mount := func(t *testing.T, features string) string {
		t.Helper()
		dir := t.TempDir()
		img := filepath.Join(dir, "fs.img")
		if out, err := exec.Command("truncate", "-s", "64M", img).CombinedOutput(); err != nil {
			t.Fatalf("truncate: %v: %s", err, out)
		}
		if out, err := exec.Command(mkfs, "-q", "-F", "-O", features, img).CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v: %s", err, out)
		}
		mnt := filepath.Join(dir, "mnt")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
			t.Fatalf("mount: %v: %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
		data := filepath.Join(mnt, "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		return data
	}
	if dev := UnjournaledExt4(mount(t, "^has_journal")); dev == "" {
		t.Error("ext4 without a journal not recognised")
	}
	if dev := UnjournaledExt4(mount(t, "has_journal")); dev != "" {
		t.Errorf("journaled ext4 named as without a journal: %s", dev)
	}
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "mountinfo"), []byte(
		"22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"+
			"30 22 0:40 / /srv/tmp\\040fs rw - tmpfs tmpfs rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ext4/vda", "ext4/loop0", "jbd2/loop0-8"} {
		if err := os.MkdirAll(filepath.Join(tmp, "procfs", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for dir, want := range map[string]string{"/var/lib/hookrun": "/dev/vda", "/srv/tmp fs/data": "", "/srv/tmp": "/dev/vda"} {
		if got := unjournaledExt4(dir, filepath.Join(tmp, "mountinfo"), filepath.Join(tmp, "procfs")); got != want {
			t.Errorf("%s: %q, want %q", dir, got, want)
		}
	}
}
