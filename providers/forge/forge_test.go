package forge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// TestRegistryNotConfigured: Get never returns nil; a forge nothing
// registered names itself in every error, which matches both
// ErrNotConfigured and ErrNoCredentials, and its Report does nothing.
func TestRegistryNotConfigured(t *testing.T) {
	ctx := context.Background()
	for _, reg := range []*forge.Registry{nil, forge.NewRegistry()} {
		f := reg.Get("gitlab")
		if f == nil || f.Name() != "gitlab" {
			t.Fatalf("Get: %v", f)
		}
		_, err := f.ChangedFiles(ctx, &workflows.Event{})
		if !errors.Is(err, forge.ErrNotConfigured) || !errors.Is(err, forge.ErrNoCredentials) ||
			err.Error() != `forge "gitlab" is not configured: no such section in the configuration` {
			t.Errorf("ChangedFiles: %v", err)
		}
		if _, err := f.OpenDraft(ctx, contract.DraftRequest{}); !errors.Is(err, forge.ErrNotConfigured) || !strings.Contains(err.Error(), `"gitlab"`) {
			t.Errorf("OpenDraft: %v", err)
		}
		ref := contract.ReportRef{CommentID: 3}
		if got, err := f.Report(ctx, &contract.RunReport{Ref: ref}); got != ref || err != nil {
			t.Errorf("Report: %+v, %v", got, err)
		}
		if reg.Has("gitlab") || len(reg.Names()) != 0 {
			t.Errorf("an empty registry has %v", reg.Names())
		}
	}
	if _, err := forge.NewRegistry().Get("").Association(ctx, &workflows.Event{}); err == nil || !strings.Contains(err.Error(), "names no forge") {
		t.Errorf("Association of an event without a forge: %v", err)
	}
}
