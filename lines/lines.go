package lines

import (
	"bytes"
	"io"
	"sync"
)

// DefaultMax is how much of a line without newline a Writer holds back by
// default.
const DefaultMax = 64 << 10

// Sink is where a Writer passes what is written to it on.
type Sink interface {
	// WriteLines receives one whole line, newline included (with
	// Options.Batch: every whole line at hand), a piece of an over-long
	// line, or on Close the last line without newline. It must not keep p.
	WriteLines(p []byte) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(p []byte) error

// WriteLines calls f.
func (f SinkFunc) WriteLines(p []byte) error { return f(p) }

// Cutter is a Sink that chooses where an over-long line is cut: CutLine
// moves the cut of buf back from at (so that, for example, no secret
// straddles it); a result <= 0 holds the line back until its newline or
// Close.
type Cutter interface {
	CutLine(buf []byte, at int) int
}

// Options tunes a Writer. The zero value is ready to use.
type Options struct {
	// Max is how much of a line without newline is held back; a partial
	// line of Max bytes or more is passed on in pieces of Max bytes (or
	// where a Cutter sink says). Default DefaultMax.
	Max int
	// Batch passes every whole line at hand to one WriteLines call (for
	// one redaction pass over them); otherwise each line gets its own.
	Batch bool
	// Closer, when set, is closed by the first Close, after the last line
	// (the destination the sink writes to).
	Closer io.Closer
}

func (o *Options) setDefaults() {
	if o.Max <= 0 {
		o.Max = DefaultMax
	}
}

// Writer passes what is written to it on to its Sink in whole lines,
// newline included. A partial line is held back until its newline, until
// it reaches Options.Max (then it is passed on in pieces without newline),
// or until Close, which passes it on as it is. The first error of the sink
// is returned by that Write and every later one. Safe for concurrent use.
//
// A Writer is made by NewWriter, or embedded in the sink's own struct and
// readied with Init (one allocation for both).
type Writer struct {
	sink Sink
	cut  Cutter // the sink, when it is one
	opts Options

	mu     sync.Mutex
	buf    []byte
	err    error
	closed bool
}

// NewWriter returns a writer passing lines on to sink.
func NewWriter(sink Sink, o Options) *Writer {
	w := &Writer{}
	w.Init(sink, o)
	return w
}

// Init readies w, typically embedded in sink, before its first Write.
func (w *Writer) Init(sink Sink, o Options) {
	o.setDefaults()
	w.sink, w.opts = sink, o
	w.cut, _ = sink.(Cutter)
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
		if w.cut != nil {
			cut = min(w.cut.CutLine(w.buf, cut), cut)
		}
		if cut <= 0 {
			break
		}
		if err := w.sink.WriteLines(w.buf[:cut]); err != nil {
			return n, w.fail(err)
		}
		w.buf = append(w.buf[:0], w.buf[cut:]...)
	}
	return n, nil
}

// lines passes on b, which ends with a newline.
func (w *Writer) lines(b []byte) error {
	if w.opts.Batch {
		return w.sink.WriteLines(b)
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if err := w.sink.WriteLines(b[:i+1]); err != nil {
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
		err = w.fail(w.sink.WriteLines(w.buf))
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

var (
	_ io.WriteCloser = (*Writer)(nil)
	_ Sink           = SinkFunc(nil)
)
