package runner

import (
	"bytes"
	"io"
	"sort"
	"strings"
	"sync"
)

// redactMask replaces every secret value.
const redactMask = "***"

// Redactor replaces secret values by *** in strings and byte slices. The zero
// value and a nil *Redactor redact nothing.
type Redactor struct {
	secrets [][]byte // longest first, so that a secret containing another is masked whole
	strs    []string
	maxLen  int
}

// NewRedactor returns a redactor for the given values. Empty values are
// ignored (masking "" would mask everything); a multi-line value is also
// masked line by line, because logs are handled one line at a time.
func NewRedactor(values ...string) *Redactor {
	seen := map[string]bool{}
	var list []string
	add := func(v string) {
		if v == "" || seen[v] {
			return
		}
		seen[v] = true
		list = append(list, v)
	}
	for _, v := range values {
		add(v)
		if strings.ContainsAny(v, "\r\n") {
			for _, line := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' }) {
				if len(strings.TrimSpace(line)) >= 4 { // a short fragment would mask unrelated text
					add(line)
				}
			}
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return len(list[i]) > len(list[j]) })
	r := &Redactor{strs: list}
	for _, v := range list {
		r.secrets = append(r.secrets, []byte(v))
		r.maxLen = max(r.maxLen, len(v))
	}
	return r
}

// String returns s with every secret value replaced by ***.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, v := range r.strs {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, redactMask)
		}
	}
	return s
}

// Bytes returns b with every secret value replaced by ***. b is returned
// unchanged (not copied) when it holds no secret.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	for _, v := range r.secrets {
		if bytes.Contains(b, v) {
			b = bytes.ReplaceAll(b, v, []byte(redactMask))
		}
	}
	return b
}

// empty reports whether there is nothing to redact.
func (r *Redactor) empty() bool { return r == nil || len(r.secrets) == 0 }

// maxLineBuffer bounds how much of a line without a newline is held back
// before it is passed on in pieces.
const maxLineBuffer = 64 << 10

// lineWriter buffers writes into complete lines, redacts each line and passes
// it on (newline included). A secret split across two writes is therefore
// still masked. A line longer than maxLineBuffer is passed on in pieces cut
// where no secret can straddle the cut. Close flushes the last partial line
// and closes the destination when it is an io.Closer.
type lineWriter struct {
	mu     sync.Mutex
	dst    io.Writer
	red    *Redactor
	buf    []byte
	closed bool
}

func newLineWriter(dst io.Writer, red *Redactor) *lineWriter {
	return &lineWriter{dst: dst, red: red}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	n := len(p)
	// Fast path: nothing buffered, and p ends on a newline.
	if len(w.buf) == 0 && n > 0 && p[n-1] == '\n' {
		return n, w.emit(p)
	}
	w.buf = append(w.buf, p...)
	if i := bytes.LastIndexByte(w.buf, '\n'); i >= 0 {
		if err := w.emit(w.buf[:i+1]); err != nil {
			return n, err
		}
		w.buf = append(w.buf[:0], w.buf[i+1:]...)
	}
	for len(w.buf) > maxLineBuffer {
		cut := w.safeCut(len(w.buf) - max(w.red.maxLenOrZero()-1, 0))
		if cut <= 0 {
			break
		}
		if err := w.emit(w.buf[:cut]); err != nil {
			return n, err
		}
		w.buf = append(w.buf[:0], w.buf[cut:]...)
	}
	return n, nil
}

// safeCut moves cut back so that no secret occurrence starts before it and
// ends after it.
func (w *lineWriter) safeCut(cut int) int {
	if w.red.empty() {
		return cut
	}
	for _, s := range w.red.secrets {
		from := max(cut-len(s)+1, 0)
		if i := bytes.Index(w.buf[from:min(cut+len(s)-1, len(w.buf))], s); i >= 0 && from+i < cut {
			cut = from + i
		}
	}
	return cut
}

func (r *Redactor) maxLenOrZero() int {
	if r == nil {
		return 0
	}
	return r.maxLen
}

// emit redacts complete lines and writes them on.
func (w *lineWriter) emit(b []byte) error {
	if w.dst == nil {
		return nil
	}
	_, err := w.dst.Write(w.red.Bytes(b))
	return err
}

// Close flushes a last line without newline and closes the destination.
func (w *lineWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var err error
	if len(w.buf) > 0 {
		err = w.emit(w.buf)
		w.buf = nil
	}
	if c, ok := w.dst.(io.Closer); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
