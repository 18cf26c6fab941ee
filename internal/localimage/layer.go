package localimage

import (
	"archive/tar"
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Layer is an image's root filesystem being assembled as an uncompressed
// tar. Parent directories are added as needed (0755); a path added twice
// keeps its first entry. Errors stick: the first one is returned by Bytes.
type Layer struct {
	buf    bytes.Buffer
	tw     *tar.Writer
	seen   map[string]bool   // paths written, without a leading slash
	inodes map[uint64]string // host inode → path written with its content (hard links)
	err    error
}

// NewLayer returns an empty layer.
func NewLayer() *Layer {
	l := &Layer{seen: map[string]bool{}, inodes: map[uint64]string{}}
	l.tw = tar.NewWriter(&l.buf)
	return l
}

var epoch = time.Unix(0, 0)

// name is p as a tar entry name: relative to the root, cleaned.
func name(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

func (l *Layer) header(h *tar.Header) bool {
	if l.err != nil {
		return false
	}
	n := name(h.Name)
	if n == "" || l.seen[n] {
		return false
	}
	l.parents(n)
	if l.err != nil {
		return false
	}
	l.seen[n] = true
	h.Name, h.ModTime = n, epoch
	if h.Typeflag == tar.TypeDir {
		h.Name += "/"
	}
	if err := l.tw.WriteHeader(h); err != nil {
		l.err = fmt.Errorf("writing layer entry %s: %w", n, err)
		return false
	}
	return true
}

func (l *Layer) parents(n string) {
	dir := path.Dir(n)
	if dir == "." || l.seen[dir] {
		return
	}
	l.Dir(dir, 0o755)
}

// Dir adds a directory; fs.ModeSticky sets the sticky bit (/tmp).
func (l *Layer) Dir(p string, mode fs.FileMode) {
	bits := int64(mode.Perm())
	if mode&fs.ModeSticky != 0 {
		bits |= 0o1000
	}
	l.header(&tar.Header{Typeflag: tar.TypeDir, Name: p, Mode: bits})
}

// File adds a regular file with data.
func (l *Layer) File(p string, mode fs.FileMode, data []byte) {
	if !l.header(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: int64(mode.Perm()), Size: int64(len(data))}) {
		return
	}
	if _, err := l.tw.Write(data); err != nil {
		l.err = fmt.Errorf("writing layer entry %s: %w", p, err)
	}
}

// Symlink adds a symbolic link p → target.
func (l *Layer) Symlink(p, target string) {
	l.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: target, Mode: 0o777})
}

// HostFile adds the host file src at dst with its content and permission
// bits, following symbolic links.
func (l *Layer) HostFile(src, dst string) {
	if l.err != nil {
		return
	}
	data, err := os.ReadFile(src)
	if err != nil {
		l.err = fmt.Errorf("reading %s: %w", src, err)
		return
	}
	st, err := os.Stat(src)
	if err != nil {
		l.err = fmt.Errorf("reading %s: %w", src, err)
		return
	}
	l.File(dst, st.Mode(), data)
}

// HostTree adds the host directory dir at the same path: directories,
// regular files (hard links between them stay hard links) and symbolic
// links as they are.
func (l *Layer) HostTree(dir string) {
	if l.err != nil {
		return
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			l.Dir(p, info.Mode())
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			l.Symlink(p, target)
		case info.Mode().IsRegular():
			if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				if first, ok := l.inodes[st.Ino]; ok {
					l.header(&tar.Header{Typeflag: tar.TypeLink, Name: p, Linkname: first})
					return nil
				}
				l.inodes[st.Ino] = name(p)
			}
			l.HostFile(p, p)
		}
		return l.err
	})
	if err != nil && l.err == nil {
		l.err = fmt.Errorf("adding %s: %w", dir, err)
	}
}

// lddLine is one line of ldd's output that names a file: "libz.so.1 =>
// /lib/x86_64-linux-gnu/libz.so.1 (0x...)" or "/lib64/ld-linux-x86-64.so.2
// (0x...)".
var lddLine = regexp.MustCompile(`^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)\s*$`)

// Libraries returns the shared libraries (the dynamic loader included)
// that the dynamically linked executables bins load, as ldd resolves them
// on this machine, sorted and without duplicates. A static executable
// needs none.
func Libraries(bins ...string) ([]string, error) {
	set := map[string]bool{}
	for _, bin := range bins {
		out, err := exec.Command("ldd", bin).CombinedOutput()
		if err != nil {
			if bytes.Contains(out, []byte("not a dynamic executable")) {
				continue
			}
			return nil, fmt.Errorf("listing the libraries of %s: %v: %s", bin, err, bytes.TrimSpace(out))
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if strings.Contains(sc.Text(), "not found") {
				return nil, fmt.Errorf("listing the libraries of %s: %s", bin, strings.TrimSpace(sc.Text()))
			}
			if m := lddLine.FindStringSubmatch(sc.Text()); m != nil {
				set[m[1]] = true
			}
		}
	}
	libs := make([]string, 0, len(set))
	for lib := range set {
		libs = append(libs, lib)
	}
	sort.Strings(libs)
	return libs, nil
}

// Bytes finishes the layer and returns it, or the first error.
func (l *Layer) Bytes() ([]byte, error) {
	if l.err != nil {
		return nil, l.err
	}
	if err := l.tw.Close(); err != nil {
		return nil, fmt.Errorf("writing layer: %w", err)
	}
	return l.buf.Bytes(), nil
}

// Has reports whether p was added.
func (l *Layer) Has(p string) bool { return l.seen[name(p)] }
