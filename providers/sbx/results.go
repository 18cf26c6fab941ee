package sbx

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hookrun/hookrun/runner/contract"
)

// makeResultsScript creates the results folder in the sandbox; $1 is its
// path (an argument, never shell source).
const makeResultsScript = `mkdir -p -- "$1"`

// copyResultsScript writes the results folder $1 as a tar stream on
// stdout, nothing when there is none. tar archives a symlink in the
// folder as a symlink, never what it points at.
const copyResultsScript = `[ -d "$1" ] || exit 0; exec tar -C "$1" -cf - .`

// maxResultsTar bounds the tar stream read from a sandbox: the results a
// run may keep, plus the headers.
const maxResultsTar = contract.MaxResultsBytes + 1<<20

// makeResults creates contract.SandboxResultsPath in a new sandbox.
func (s *Session) makeResults(ctx context.Context) error {
	path := contract.SandboxResultsPath(s.workspace)
	return s.script(ctx, "creating "+path, contract.ExecRequest{StepID: "results",
		Argv: []string{"sh", "-c", makeResultsScript, "hookrun-results", path}})
}

// copyResults copies the sandbox's results folder to the host folder dir
// (contract.ExecRequest.Results) through `sbx exec ... tar`: regular files
// and directories only (a symlink, hard link or device in the stream is
// skipped), at most maxResultsTar bytes, written below dir without
// following any symlink there (each path component is opened O_NOFOLLOW,
// each file written to a new name and renamed over the old).
func (s *Session) copyResults(ctx context.Context, dir string) error {
	s.resultsMu.Lock()
	defer s.resultsMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.p.cfg.CommandTimeout)
	defer cancel()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	type execDone struct {
		res contract.ExecResult
		err error
	}
	done := make(chan execDone, 1)
	go func() {
		res, err := s.Exec(ctx, contract.ExecRequest{RunID: s.runID, StepID: "results",
			Argv: []string{"sh", "-c", copyResultsScript, "hookrun-results", contract.SandboxResultsPath(s.workspace)}, Stdout: pw, Stderr: &stderr})
		pw.Close()
		done <- execDone{res, err}
	}()
	lr := &io.LimitedReader{R: pr, N: maxResultsTar + 1}
	xerr := extractTar(lr, dir)
	if xerr == nil {
		_, _ = io.Copy(io.Discard, lr) // the archive's padding
	}
	if lr.N <= 0 {
		xerr = fmt.Errorf("the results folder of sandbox %s holds more than %d bytes", s.name, maxResultsTar)
	}
	pr.CloseWithError(errors.New("results not read further")) // let tar end if we stopped reading
	d := <-done
	switch {
	case xerr != nil:
		return fmt.Errorf("copying the results folder out of sandbox %s: %w", s.name, xerr)
	case d.err != nil:
		return fmt.Errorf("copying the results folder out of sandbox %s: %w", s.name, d.err)
	case d.res.ExitCode != 0:
		return fmt.Errorf("copying the results folder out of sandbox %s: tar exited %d: %s", s.name, d.res.ExitCode, lastLine(stderr.String()))
	}
	return nil
}

// extractTar writes the regular files and directories of the tar stream r
// below dir.
func extractTar(r io.Reader, dir string) error {
	root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer unix.Close(root)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the tar stream: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") || path.IsAbs(name) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			fd, err := openDirNoFollow(root, strings.Split(name, "/"), true)
			if err != nil {
				return err
			}
			unix.Close(fd)
		case tar.TypeReg:
			if err := writeNoFollow(root, name, tr); err != nil {
				return err
			}
		}
	}
}

// openDirNoFollow opens the directory parts below root, creating missing
// ones when create, never following a symlink.
func openDirNoFollow(root int, parts []string, create bool) (int, error) {
	fd, err := unix.Dup(root)
	if err != nil {
		return -1, err
	}
	for _, p := range parts {
		next, err := unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, p, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("opening %s below the results folder (a symlink is not followed): %w", p, err)
		}
		fd = next
	}
	return fd, nil
}

// writeNoFollow writes name below root from r: to a new file, renamed
// over name (replacing a symlink there, never writing through it).
func writeNoFollow(root int, name string, r io.Reader) error {
	dirParts, base := path.Split(name)
	var parts []string
	if d := strings.Trim(dirParts, "/"); d != "" {
		parts = strings.Split(d, "/")
	}
	dfd, err := openDirNoFollow(root, parts, true)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	tmp := ".hookrun-copy-" + base
	_ = unix.Unlinkat(dfd, tmp, 0)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	f := fdFile(fd, tmp)
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, base)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

func fdFile(fd int, name string) *os.File { return os.NewFile(uintptr(fd), name) }
