package lines

import (
	"bytes"
	"io"
	"sync"
)

// DefaultMax is how much of a line without newline a Writer holds back by
// default.
const DefaultMax = 64 << 10

// Options tunes a Writer. The zero value is ready to use.
type Options struct {
	// Max is how much of a line without newline is held back; a partial
	// line of Max bytes or more is passed on in pieces of Max bytes (or
	// where Cut says). Default DefaultMax.
	Max int
	// Cut, when set, moves the cut of an over-long partial line back from
	// at (so that, for example, no secret straddles it); a result <= 0
	// holds the line back until its newline or Close.
	Cut func(buf []byte, at int) int
	// Batch passes every whole line at hand to one emit call (for one
	// redaction pass over them); otherwise emit gets one line per call.
	Batch bool
	// Closer, when set, is closed by the first Close, after the last line
	// (the destination emit writes to).
	Closer io.Closer
}

func (o *Options) setDefaults() {
	if o.Max <= 0 {
		o.Max = DefaultMax
	}
}

// Writer passes what is written to it on to emit in whole lines, newline
// included: one line per call, or with Options.Batch every whole line at
// hand. A partial line is held back until its newline, until it reaches
// Options.Max (then it is passed on in pieces without newline), or until
// Close, which passes it on as it is. The first error of emit is returned
// by that Write and every later one. Safe for concurrent use.
type Writer struct {
	emit func(p []byte) error
	opts Options

	mu     sync.Mutex
	buf    []byte
	err    error
	closed bool
}

// NewWriter returns a writer passing lines on to emit. emit must not keep p
// after it returns.
func NewWriter(emit func(p []byte) error, o Options) *Writer {
	o.setDefaults()
	return &Writer{emit: emit, opts: o}
}

// Write buffers p and passes on every line it completes.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	if w.err != nil {
		return 0, w.err
	}
	n := len(p)
	if len(w.buf) == 0 && n > 0 && p[n-1] == '\n' {
		// Nothing held back and p ends a line: pass it on without copying.
		return n, w.fail(w.lines(p))
	}
	w.buf = append(w.buf, p...)
	if i := bytes.LastIndexByte(w.buf, '\n'); i >= 0 {
		if err := w.lines(w.buf[:i+1]); err != nil {
			return n, w.fail(err)
		}
		w.buf = append(w.buf[:0], w.buf[i+1:]...)
	}
	for len(w.buf) >= w.opts.Max {
		cut := w.opts.Max
		if w.opts.Cut != nil {
			cut = min(w.opts.Cut(w.buf, cut), cut)
		}
		if cut <= 0 {
			break
		}
		if err := w.emit(w.buf[:cut]); err != nil {
			return n, w.fail(err)
		}
		w.buf = append(w.buf[:0], w.buf[cut:]...)
	}
	return n, nil
}

// lines passes on b, which ends with a newline.
func (w *Writer) lines(b []byte) error {
	if w.opts.Batch {
		return w.emit(b)
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if err := w.emit(b[:i+1]); err != nil {
			return err
		}
		b = b[i+1:]
	}
	return nil
}

// fail keeps the first error for later writes.
func (w *Writer) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

// Close passes on a last line without newline, then closes Options.Closer.
// Writes after Close fail; a second Close does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.err
	if err == nil && len(w.buf) > 0 {
		err = w.fail(w.emit(w.buf))
		w.buf = nil
	}
	if w.opts.Closer != nil {
		if cerr := w.opts.Closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Trim returns line without its newline and a carriage return before it.
func Trim(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	return bytes.TrimSuffix(line, []byte{'\r'})
}

var _ io.WriteCloser = (*Writer)(nil)
