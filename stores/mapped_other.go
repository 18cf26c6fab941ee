//go:build !linux

package stores

// releaseMapped does nothing where madvise is not used (mapped_linux.go).
func (x *watchIndex) releaseMapped() {}
