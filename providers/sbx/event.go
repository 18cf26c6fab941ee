package sbx

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/hookrun/hookrun/runner/contract"
)

// writeEventScript copies stdin to the file $1, creating its directory. It
// is fixed text: the path travels as an argument, never as shell source.
const writeEventScript = `mkdir -p -- "${1%/*}" && cat > "$1"`

// writeEventFile copies the run's event file from the host into the
// sandbox, at contract.SandboxEventPath (in its clone's .git), through `sbx
// exec -i`: a --clone sandbox sees only the repository's tracked files, and
// the payload must not become one of them.
func (s *Session) writeEventFile(ctx context.Context, hostFile string) error {
	f, err := os.Open(hostFile)
	if err != nil {
		return fmt.Errorf("reading the event file: %w", err)
	}
	defer f.Close()
	path := contract.SandboxEventPath(s.workspace)
	return s.script(ctx, "writing "+path, contract.ExecRequest{StepID: "event-file",
		Argv: []string{"sh", "-c", writeEventScript, "hookrun-event", path}, Stdin: f})
}

// script runs req, a script of hookrun's own, in the sandbox within
// CommandTimeout: an error saying what failed ("<what> in the sandbox:
// exit N: <its last line of stderr>").
func (s *Session) script(ctx context.Context, what string, req contract.ExecRequest) error {
	ctx, cancel := context.WithTimeout(ctx, s.p.cfg.CommandTimeout)
	defer cancel()
	var stderr bytes.Buffer
	req.RunID, req.Stderr = s.runID, &stderr
	res, err := s.Exec(ctx, req)
	switch {
	case err != nil:
		return err
	case res.ExitCode != 0:
		return fmt.Errorf("%s in the sandbox: exit %d: %s", what, res.ExitCode, lastLine(stderr.String()))
	}
	return nil
}
