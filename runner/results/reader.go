package results

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/hookrun/hookrun/runner/contract"
)

// Options says how a results folder is read. Zero values take the
// defaults.
type Options struct {
	Roots       Roots // the workspace's names, for making paths relative
	MaxBytes    int64 // bytes of result files read per run; default contract.MaxResultsBytes
	MaxFindings int   // findings kept per run; default contract.MaxResultsFindings
	MaxDepth    int   // directory levels walked below the folder; default 8
	MaxEntries  int   // directory entries looked at per scan; default 10000
}

func (o *Options) setDefaults() {
	if o.MaxBytes <= 0 {
		o.MaxBytes = contract.MaxResultsBytes
	}
	if o.MaxFindings <= 0 {
		o.MaxFindings = contract.MaxResultsFindings
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = 8
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 10000
	}
}

// Reader reads one run's results folder after each of its steps. Each
// Scan decodes the result files that are new or changed since the last;
// Results assembles what the folder holds now. It is safe for concurrent
// use (steps of a graph end at the same time).
type Reader struct {
	dir  string
	opts Options

	mu    sync.Mutex
	files map[string]*fileState // by path relative to dir
	notes []string              // symlinks and size cuts, once each
	noted map[string]bool
	quiet *dirStamp // the folder as the last Scan found it empty and marked it (markQuiet); nil: list it
}

// fileState is one result file as last decoded.
type fileState struct {
	stamp   stamp
	decoded *decoded
	actions *contract.Actions
}

// stamp tells whether a file changed: its inode, size and change time.
type stamp struct {
	ino, size   int64
	sec, nsec   int64
	msec, mnsec int64
}

// decoded is what one findings file holds.
type decoded struct {
	findings []contract.Finding
	outside  int // findings dropped: outside the checkout
}

func (d *decoded) add(file string, f contract.Finding, ok bool) {
	if !ok {
		d.outside++
		return
	}
	f.File = file
	d.findings = append(d.findings, f)
}

// NewReader returns a reader of the folder dir.
func NewReader(dir string, opts Options) *Reader {
	opts.setDefaults()
	return &Reader{dir: dir, opts: opts, files: map[string]*fileState{}, noted: map[string]bool{}}
}

// kind is the format a file name says, "" for files hookrun ignores.
func kind(rel string) string {
	switch {
	case rel == ActionsFile:
		return "actions"
	case strings.HasSuffix(rel, ".sarif"):
		return "sarif"
	case strings.HasSuffix(rel, ".rdjson"):
		return "rdjson"
	case strings.HasSuffix(rel, ".rdjsonl"):
		return "rdjsonl"
	}
	return ""
}

// Scan reads the folder and decodes every result file that is new or
// changed. The error of a malformed file is a *PositionError (several are
// joined); its file then counts as holding nothing. A missing folder holds
// nothing. A folder the last Scan found empty is not listed again while
// nothing was made in it (markQuiet, below).
func (r *Reader) Scan() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stillQuiet() {
		return nil
	}
	r.quiet = nil
	fd, err := unix.Open(r.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening the results folder: %w", err)
	}
	seen := map[string]bool{}
	budget := r.opts.MaxBytes
	entries := 0
	var errs []error
	r.walk(fd, "", 0, &entries, &budget, seen, &errs)
	for rel := range r.files {
		if !seen[rel] {
			delete(r.files, rel) // removed by a later step
		}
	}
	if entries == 0 && len(errs) == 0 {
		r.markQuiet()
	}
	return errors.Join(errs...)
}

// walk reads the directory dirfd (rel below the folder; it closes dirfd),
// in name order, never following a symlink.
func (r *Reader) walk(dirfd int, rel string, depth int, entries *int, budget *int64, seen map[string]bool, errs *[]error) {
	dir := os.NewFile(uintptr(dirfd), rel)
	defer dir.Close()
	list, err := dir.ReadDir(-1)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("reading the results folder %s: %w", displayDir(rel), err))
		return
	}
	slices.SortFunc(list, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, e := range list {
		*entries++
		if *entries > r.opts.MaxEntries {
			r.note("the results folder holds more than %d entries: the rest were not read", r.opts.MaxEntries)
			return
		}
		name := path.Join(rel, e.Name())
		switch t := e.Type(); {
		case t&os.ModeSymlink != 0:
			r.note("%s is a symlink: not followed", name)
		case t.IsDir():
			if depth+1 >= r.opts.MaxDepth {
				r.note("%s lies deeper than %d levels: not read", name, r.opts.MaxDepth)
				continue
			}
			sub, err := unix.Openat(dirfd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				r.note("%s could not be opened: %v", name, err)
				continue
			}
			r.walk(sub, name, depth+1, entries, budget, seen, errs)
		case t.IsRegular():
			k := kind(name)
			if k == "" || (k == "actions" && rel != "") {
				continue
			}
			seen[name] = true
			if err := r.readFile(dirfd, e.Name(), name, k, budget); err != nil {
				*errs = append(*errs, err)
			}
		}
	}
}

// readFile decodes the file name of dirfd (rel below the folder) unless
// it is unchanged, within the byte budget.
func (r *Reader) readFile(dirfd int, name, rel, k string, budget *int64) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		r.note("%s could not be opened: %v", rel, err)
		return nil
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil // replaced by something else than a file meanwhile
	}
	s := stamp{ino: int64(st.Ino), size: st.Size, sec: st.Ctim.Sec, nsec: st.Ctim.Nsec, msec: st.Mtim.Sec, mnsec: st.Mtim.Nsec}
	if st.Size > *budget {
		r.note("%s (%d bytes) was not read: the results of a run are read up to %d bytes", rel, st.Size, r.opts.MaxBytes)
		delete(r.files, rel)
		return nil
	}
	*budget -= st.Size
	if old, ok := r.files[rel]; ok && old.stamp == s {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, st.Size+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", rel, err)
	}
	if int64(len(data)) > st.Size { // grew while read
		data = data[:st.Size]
	}
	fs := &fileState{stamp: s}
	r.files[rel] = fs // a malformed file holds nothing, and is not reported again unchanged
	roots := r.opts.Roots
	switch k {
	case "actions":
		fs.actions, err = decodeActions(rel, data)
	case "sarif":
		fs.decoded, err = decodeSARIF(rel, data, roots)
	case "rdjson":
		fs.decoded, err = decodeRDJSON(rel, data, roots)
	case "rdjsonl":
		fs.decoded, err = decodeRDJSONL(rel, data, roots)
	}
	return err
}

func (r *Reader) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !r.noted[msg] {
		r.noted[msg] = true
		r.notes = append(r.notes, msg)
	}
}

func displayDir(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// Dropped reasons (contract.Results.Dropped keys).
const (
	ReasonOutside = outsideReason
)

// ReasonLimit is the Dropped key of findings over the run's limit.
func ReasonLimit(max int) string { return fmt.Sprintf("over the limit of %d findings per run", max) }

// Results is what the folder held at the last Scan: the findings of its
// files in name order, up to MaxFindings, what was dropped and why, and
// the actions; nil when it held nothing and nothing was noted.
func (r *Reader) Results() *contract.Results {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := &contract.Results{Dropped: map[string]int{}}
	names := make([]string, 0, len(r.files))
	for n := range r.files {
		names = append(names, n)
	}
	slices.Sort(names)
	cut := 0
	var cutFiles []string
	for _, n := range names {
		fs := r.files[n]
		if fs.actions != nil {
			res.Actions = fs.actions
		}
		d := fs.decoded
		if d == nil {
			continue
		}
		if d.outside > 0 {
			res.Dropped[ReasonOutside] += d.outside
		}
		room := r.opts.MaxFindings - len(res.Findings)
		take := min(room, len(d.findings))
		res.Findings = append(res.Findings, d.findings[:take]...)
		if take < len(d.findings) {
			cut += len(d.findings) - take
			cutFiles = append(cutFiles, n)
		}
	}
	res.Notes = append(res.Notes, r.notes...)
	if n := res.Dropped[ReasonOutside]; n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d findings outside the checkout were dropped", n))
	}
	if cut > 0 {
		res.Dropped[ReasonLimit(r.opts.MaxFindings)] = cut
		res.Notes = append(res.Notes, fmt.Sprintf("%d findings over the limit of %d per run were cut (from %s)", cut, r.opts.MaxFindings, strings.Join(cutFiles, ", ")))
	}
	if len(res.Dropped) == 0 {
		res.Dropped = nil
	}
	if len(res.Findings) == 0 && res.Dropped == nil && len(res.Notes) == 0 && res.Actions == nil {
		return nil
	}
	return res
}

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
		// Through fd (its /proc link names the very folder opened, not
		// whatever the path names by now): what counts is the stamp of
		// fd's folder, read below, and that it is empty after.
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: st.Ctim.Sec - quietMarkAge, Nsec: st.Ctim.Nsec}}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), ts, 0); err != nil {
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
