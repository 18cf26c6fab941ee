package engine

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hookrun/hookrun/lines"
	"github.com/hookrun/hookrun/runner/contract"
)

// logWriter returns a redacting line writer for one stream of one step.
func (x *execution) logWriter(stepID, stream string) io.WriteCloser {
	var dst io.Writer
	if x.e.cfg.Logs != nil {
		dst = x.e.cfg.Logs.Writer(x.spec.ID, stepID, stream)
	}
	return newLineWriter(dst, x.red)
}

// sysf writes one line to the run's system log.
func (x *execution) sysf(format string, args ...any) {
	if x.sys == nil {
		return
	}
	fmt.Fprintf(x.sys, format+"\n", args...)
}

// stepSysf writes one line to a step's system stream (retries, failures,
// skips, truncation). These are rare, so the writer is opened per line.
func (x *execution) stepSysf(stepID, format string, args ...any) {
	w := x.logWriter(stepID, contract.StreamSystem)
	fmt.Fprintf(w, format+"\n", args...)
	w.Close()
}

// redactMask replaces every secret value.
const redactMask = "***"

// Redactor replaces secret values by *** in strings and byte slices. The zero
// value and a nil *Redactor redact nothing.
type Redactor struct {
	secrets [][]byte // longest first, so that a secret containing another is masked whole
	strs    []string
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

// maxLineBuffer bounds how much of a line without a newline is held back
// before it is passed on in pieces.
const maxLineBuffer = lines.DefaultMax

// safeCut moves cut back so that no secret occurrence in buf starts before
// it and ends after it.
func (r *Redactor) safeCut(buf []byte, cut int) int {
	if r == nil {
		return cut
	}
	for _, s := range r.secrets {
		from := max(cut-len(s)+1, 0)
		if i := bytes.Index(buf[from:min(cut+len(s)-1, len(buf))], s); i >= 0 && from+i < cut {
			cut = from + i
		}
	}
	return cut
}

// lineWriter buffers writes into complete lines (package lines), redacts
// them and passes them on to dst (newline included; nil dst: discarded). A
// secret split across two writes is therefore still masked. A line longer
// than maxLineBuffer is passed on in pieces cut where no secret can
// straddle the cut. Close flushes the last partial line and closes dst
// when it is an io.Closer.
type lineWriter struct {
	lines.Writer
	dst io.Writer
	red *Redactor
}

func newLineWriter(dst io.Writer, red *Redactor) *lineWriter {
	w := &lineWriter{dst: dst, red: red}
	closer, _ := dst.(io.Closer)
	w.Init(w, lines.Options{Batch: true, Closer: closer})
	return w
}

// WriteLines redacts whole lines and writes them on.
func (w *lineWriter) WriteLines(b []byte) error {
	if w.dst == nil {
		return nil
	}
	_, err := w.dst.Write(w.red.Bytes(b))
	return err
}

// CutLine cuts an over-long line where no secret straddles the cut.
func (w *lineWriter) CutLine(buf []byte, at int) int { return w.red.safeCut(buf, at) }

var _ lines.Cutter = (*lineWriter)(nil)
