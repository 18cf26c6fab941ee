package sbx

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hookrun/hookrun/runner/contract"
)

// RemoveOrphans removes the sandboxes hookrun created (`sbx ls`, names
// hookrun-<run>) whose run keep does not claim, with `sbx rm --force`:
// what a runner that crashed, or this one before a restart, left. keep
// gets the run id as the name carries it, in lowercase. It returns how many
// it removed.
func (p *Provider) RemoveOrphans(ctx context.Context, keep func(runID string) bool) (removed int, err error) {
	out, err := p.run(ctx, nil, p.cfg.Binary, "ls")
	if err != nil {
		if k := classify(string(out), ""); k != nil {
			return 0, fmt.Errorf("listing sandboxes: %w", k)
		}
		return 0, fmt.Errorf("listing sandboxes: %w", failed("sbx ls", out, err))
	}
	var errs []error
	for _, name := range hookrunSandboxes(string(out)) {
		if keep != nil && keep(strings.TrimPrefix(name, contract.SandboxPrefix)) {
			continue
		}
		if err := p.sbx(ctx, nil, name, "rm", "--force", name); err != nil && !errors.Is(err, ErrSandboxNotFound) {
			errs = append(errs, fmt.Errorf("removing sandbox %s: %w", name, err))
			continue
		}
		removed++
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("removing orphaned sandboxes: %w", errors.Join(errs...))
	}
	return removed, nil
}

// hookrunSandboxes reads the names of hookrun's sandboxes from `sbx ls`:
// the first column of each line after the header.
func hookrunSandboxes(ls string) []string {
	var names []string
	for _, line := range strings.Split(ls, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], contract.SandboxPrefix) && len(f[0]) > len(contract.SandboxPrefix) {
			names = append(names, f[0])
		}
	}
	return names
}
