package git

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// UnjournaledExt4 returns the device of the file system that holds dir
// when it is ext4 without a journal, else "", and whether that file system
// is mounted with discard. There ext4's inode allocator passes over every
// inode freed in the last minutes (recently_deleted in fs/ext4/ialloc.c,
// which only a file system without a journal calls), so the directories
// each run makes and removes cost more the more runs went before: a third
// of `hookrun serve`'s CPU per run on such a root file system, against an
// eighth on a journaled one (docs/performance.md, "The run's
// directories"). With discard, such a file system also discards each block
// it frees before the call that freed it returns (a journaled one batches
// them at its commits), so each directory removed waits for the device:
// 0.2–0.45 ms on a 2-core VM's virtio disk, against 0.01–0.03 ms without
// (docs/performance.md, "The engine's own cost per step").
func UnjournaledExt4(dir string) (device string, discard bool) {
	return unjournaledExt4(dir, "/proc/self/mountinfo", "/proc/fs")
}

// unjournaledExt4 is UnjournaledExt4 reading the mount table and procfs's
// fs directory at the given paths.
func unjournaledExt4(dir, mountinfo, procfs string) (device string, discard bool) {
	p, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	m := mountOf(p, mountinfo)
	if m.fstype != "ext4" || !strings.HasPrefix(m.source, "/dev/") {
		return "", false
	}
	name := filepath.Base(m.source)
	if _, err := os.Stat(filepath.Join(procfs, "ext4", name)); err != nil {
		return "", false // not a device ext4 knows by that name: say nothing
	}
	if _, err := os.Stat(filepath.Join(procfs, "jbd2", name+"-8")); err == nil {
		return "", false // its journal
	}
	return m.source, slices.Contains(m.options, "discard")
}

// mount is a line of a mountinfo file: the file system's type, source, and
// the mount's and the file system's options together.
type mount struct {
	fstype, source string
	options        []string
}

// mountOf returns the mount that holds path p (the longest mount point
// above it), from a mountinfo file.
func mountOf(p, mountinfo string) mount {
	f, err := os.Open(mountinfo)
	if err != nil {
		return mount{}
	}
	defer f.Close()
	best, found := -1, mount{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fl := range fields {
			if fl == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+2 >= len(fields) {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		if (p == mp || mp == "/" || strings.HasPrefix(p, mp+"/")) && len(mp) >= best {
			best, found = len(mp), mount{fstype: fields[sep+1], source: fields[sep+2], options: strings.Split(fields[5], ",")}
			if sep+3 < len(fields) {
				found.options = append(found.options, strings.Split(fields[sep+3], ",")...)
			}
		}
	}
	return found
}

// spreadChildren has ext4 place dir's new subdirectories as it places
// top-level ones (FS_TOPDIR_FL, `chattr +T`): each in the block group with
// the fewest directories, rather than in dir's own group. New sets it on
// <data>/workspaces and <data>/scratch before it makes their runShards
// directories, on a file system without a journal (UnjournaledExt4), whose
// inode allocator passes over, one by one, every inode freed in the group
// in the last minutes: the runs' directories then share that walk with a
// sixteenth of the runs, and not with data_dir's neighbours (/tmp's or
// /var/lib's other files come and go in data_dir's group). Not on a
// journaled ext4, where directories spread apart cost more
// (docs/performance.md, "The run's directories"). Best effort: without the
// flag the layout is as before.
func spreadChildren(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil || flags&fsTopdirFL != 0 {
		return
	}
	_ = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopdirFL))
}

// fsTopdirFL is FS_TOPDIR_FL of linux/fs.h ("top of directory
// hierarchies"), which golang.org/x/sys/unix does not name.
const fsTopdirFL = 0x00020000
