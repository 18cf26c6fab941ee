package results

import (
	"golang.org/x/sys/unix"
)

// A folder that a Scan found empty need not be listed again as long as
// nothing was added to it: an empty directory can only come to hold
// results through an entry made in it (a file, a directory, a link, a
// rename into it), and every such change sets the directory's change and
// modification times, together, to the same instant. The times alone do
// not tell a change apart from the state before it, since the clock the
// kernel stamps them with may not have moved in between. So once a Scan
// has found the folder empty, the reader sets its modification time back
// (an hour, quietMarkAge) when it is not already apart from its change
// time, checks that it is still empty, and remembers its identity and
// both times (quiet). While they stay as remembered, with modification and
// change time apart, no entry was made in it since: Scan skips the
// listing. Any entry made, moved or removed sets both times to one
// instant, which differs from the remembered pair, and the next Scan lists
// the folder again. A folder replaced by another has another identity.
//
// This is only trusted on local filesystems whose times the kernel keeps
// itself (quietFilesystems); on others (NFS, FUSE, 9p, ...) a client may
// see cached or server-set times, and every Scan lists the folder.

// quietMarkAge is how far back a folder's modification time is set when it
// is marked, so that it differs from its change time.
const quietMarkAge = 3600 // seconds

// quietFilesystems are the filesystem types (statfs f_type) on which a
// directory's times are set by the kernel on every change of its entries.
var quietFilesystems = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:      true, // also ext2 and ext3
	unix.TMPFS_MAGIC:           true,
	unix.XFS_SUPER_MAGIC:       true,
	unix.BTRFS_SUPER_MAGIC:     true,
	unix.F2FS_SUPER_MAGIC:      true,
	unix.OVERLAYFS_SUPER_MAGIC: true,
}

// dirStamp is what identifies a folder and its last change.
type dirStamp struct {
	dev, ino    uint64
	msec, mnsec int64 // modification time
	csec, cnsec int64 // change time
}

func stampOf(st *unix.Stat_t) dirStamp {
	return dirStamp{dev: st.Dev, ino: st.Ino, msec: st.Mtim.Sec, mnsec: st.Mtim.Nsec, csec: st.Ctim.Sec, cnsec: st.Ctim.Nsec}
}

// apart says whether the modification and change times differ, which no
// change of the folder's entries leaves them.
func (s dirStamp) apart() bool { return s.msec != s.csec || s.mnsec != s.cnsec }

// stillQuiet says whether the folder is the one the last Scan found empty
// and marked, with no entry made in it since. Called with r.mu held.
func (r *Reader) stillQuiet() bool {
	if r.quiet == nil {
		return false
	}
	var st unix.Stat_t
	if err := unix.Lstat(r.dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	return stampOf(&st) == *r.quiet
}

// markQuiet marks the folder, which the Scan that just ended found empty
// (see above), so that the next Scan may skip listing it while nothing is
// made in it. It changes nothing but the folder's modification time; when
// it cannot (another owner's folder, another filesystem) the folder stays
// unmarked and is listed each time. Called with r.mu held.
func (r *Reader) markQuiet() {
	r.quiet = nil
	fd, err := unix.Open(r.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil || !quietFilesystems[int64(fs.Type)] {
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return
	}
	if !stampOf(&st).apart() {
		// The path may name another folder by now: what counts is the
		// stamp of fd's, read below, and that fd's folder is empty after.
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: st.Ctim.Sec - quietMarkAge, Nsec: st.Ctim.Nsec}}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, r.dir, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return
		}
		if err := unix.Fstat(fd, &st); err != nil {
			return
		}
	}
	s := stampOf(&st)
	if !s.apart() || !emptyDir(fd) {
		return
	}
	r.quiet = &s
}

// emptyDir says whether the directory fd holds no entry besides . and ..
func emptyDir(fd int) bool {
	buf := make([]byte, 256)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		if _, _, names := unix.ParseDirent(buf[:n], -1, nil); len(names) > 0 { // without . and ..
			return false
		}
	}
}
