package bench

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
	if _, err := s.js.CreateStream(ctx, jetstream.StreamConfig{Name: floorStream, Subjects: []string{"bench.floor.>"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: 1, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	snd := newSender(s.url)
	op := func(ctx context.Context, _ int) error { return snd.accept(ctx) }
	floorOp := func(ctx context.Context, _ int) error {
		_, err := s.js.Publish(ctx, "bench.floor.pull_request", payload)
		return err
	}
	closedLoop(ctx, 8, 500, op)
	if os.Getenv("SCRATCH") == "floor" {
		r := closedLoop(ctx, 8, 20000, floorOp)
		t.Logf("floor %.0f/s errors %d", r.perSecond(), r.Errors)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	r := closedLoop(ctx, 8, 20000, op)
	runtime.ReadMemStats(&m1)
	t.Logf("%.0f/s errors %d; %d B and %d objects allocated per delivery, %d GCs", r.perSecond(), r.Errors,
		(m1.TotalAlloc-m0.TotalAlloc)/20000, (m1.Mallocs-m0.Mallocs)/20000, m1.NumGC-m0.NumGC)
}
