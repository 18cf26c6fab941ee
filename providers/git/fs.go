package git

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// UnjournaledExt4 returns the device of the file system that holds dir
// when it is ext4 without a journal, else "". There ext4's inode allocator
// passes over every inode freed in the last minutes (recently_deleted in
// fs/ext4/ialloc.c, which only a file system without a journal calls), so
// the directories each run makes and removes cost more the more runs went
// before: a third of `hookrun serve`'s CPU per run on such a root file
// system, against an eighth on a journaled one (docs/performance.md, "The
// run's directories").
func UnjournaledExt4(dir string) string {
	return unjournaledExt4(dir, "/proc/self/mountinfo", "/proc/fs")
}

// unjournaledExt4 is UnjournaledExt4 reading the mount table and procfs's
// fs directory at the given paths.
func unjournaledExt4(dir, mountinfo, procfs string) string {
	p, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	fstype, source := mountOf(p, mountinfo)
	if fstype != "ext4" || !strings.HasPrefix(source, "/dev/") {
		return ""
	}
	name := filepath.Base(source)
	if _, err := os.Stat(filepath.Join(procfs, "ext4", name)); err != nil {
		return "" // not a device ext4 knows by that name: say nothing
	}
	if _, err := os.Stat(filepath.Join(procfs, "jbd2", name+"-8")); err == nil {
		return "" // its journal
	}
	return source
}

// mountOf returns the file system type and source of the mount that holds
// path p (the longest mount point above it), from a mountinfo file.
func mountOf(p, mountinfo string) (fstype, source string) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	best := -1
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
			best, fstype, source = len(mp), fields[sep+1], fields[sep+2]
		}
	}
	return fstype, source
}
