package runner

import (
	"fmt"
	"io"

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
