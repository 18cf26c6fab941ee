package gitea

import (
	"context"
	"fmt"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
)

// Review posts r's findings as a pull review (github.Reporter.Review, in
// its Gitea form: the diff from pulls/{n}.diff, comments at new_position,
// suggestions as a fenced diff; gone findings are counted, their comments
// left as they are).
func (f *Forge) Review(ctx context.Context, r *contract.RunReport) (*forge.ReviewSummary, error) {
	if err := f.Credentials(); err != nil {
		return nil, fmt.Errorf("reviewing: %w", err)
	}
	return f.rep.Review(ctx, r)
}
