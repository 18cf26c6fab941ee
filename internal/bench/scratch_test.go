package bench

import (
	"context"
	"os"
	"testing"
)

func TestScratchIngest(t *testing.T) {
	if os.Getenv("SCRATCH") == "" {
		t.Skip()
	}
	ctx := context.Background()
	s, err := openStack(ctx, t.TempDir(), nil, map[string]string{"bench-ingest.yaml": ingestWorkflow})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	snd := newSender(s.url)
	op := func(ctx context.Context, _ int) error { return snd.accept(ctx) }
	closedLoop(ctx, 8, 500, op)
	r := closedLoop(ctx, 8, 20000, op)
	t.Logf("%.0f/s errors %d", r.perSecond(), r.Errors)
}
