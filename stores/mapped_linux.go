package stores

import (
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// releaseMapped lets the kernel take back the pages of the index file
// this process mapped (bbolt reads through a shared, read-only mapping):
// they count in the process's RSS until it does, and a load touches every
// page once. The mapping stays; a page read again is mapped again from
// the page cache. It runs in a read transaction, which keeps bbolt from
// remapping the file meanwhile.
func (x *watchIndex) releaseMapped() {
	db := x.db.Load()
	if db == nil {
		return
	}
	_ = db.View(func(tx *bolt.Tx) error {
		info := db.Info()
		if info.Data == 0 || tx.Size() == 0 {
			return nil
		}
		_, _, errno := unix.Syscall(unix.SYS_MADVISE, info.Data, uintptr(tx.Size()), unix.MADV_DONTNEED)
		if errno != 0 {
			return errno
		}
		return nil
	})
}
