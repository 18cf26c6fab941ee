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
	ctx, cancel := context.WithTimeout(ctx, s.p.cfg.CommandTimeout)
	defer cancel()
	var stderr bytes.Buffer
	res, err := s.Exec(ctx, contract.ExecRequest{
		RunID:  s.runID,
		StepID: "event-file",
		Argv:   []string{"sh", "-c", writeEventScript, "hookrun-event", contract.SandboxEventPath(s.workspace)},
		Stdin:  f,
		Stderr: &stderr,
	})
	switch {
	case err != nil:
		return err
	case res.ExitCode != 0:
		return fmt.Errorf("writing %s in the sandbox: exit %d: %s", contract.SandboxEventPath(s.workspace), res.ExitCode, lastLine(stderr.String()))
	}
	return nil
}
