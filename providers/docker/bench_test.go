package docker

import (
	"context"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/hookrun/hookrun/providers/docker/dockertest"
	"github.com/hookrun/hookrun/runner/contract"
)

// The benchmarks measure what hookrun adds to a step on top of the Docker
// operations it cannot avoid. Each iteration does the same trivial step
// (`true`) once through hookrun and once directly with the SDK, alternating
// which goes first, and reports both times and their ratio:
//
//	go test -run '^$' -bench . -benchtime 20x ./providers/docker/
//
// hookrun-ns/op and sdk-ns/op are per step; hookrun/sdk is the ratio (1.0 =
// no overhead).

// BenchmarkPerStepContainer: Docker.Exec with a step container (image check,
// create, attach, wait, start, stream, remove) against SDK create, start,
// wait, remove.
func BenchmarkPerStepContainer(b *testing.B) {
	d := newDocker(b, Config{})
	ws := b.TempDir()
	cli := d.Client()
	ctx := context.Background()
	req := contract.ExecRequest{RunID: runPrefix + "bench", StepID: "b", Workspace: ws, Container: testImage, Argv: []string{"true"}}
	direct := func() {
		created, err := cli.ContainerCreate(ctx, &container.Config{Image: dockertest.Ref, Cmd: []string{"true"},
			Labels: map[string]string{LabelRun: runPrefix + "bench"}}, &container.HostConfig{}, nil, nil, "")
		if err != nil {
			b.Fatal(err)
		}
		waitCh, errCh := cli.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
		if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-waitCh:
		case err := <-errCh:
			b.Fatal(err)
		}
		if err := cli.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
	}
	viaHookrun := func() {
		if res, err := d.Exec(ctx, req); err != nil || res.ExitCode != 0 {
			b.Fatalf("exit %d, err %v", res.ExitCode, err)
		}
	}
	compare(b, viaHookrun, direct)
}

// BenchmarkRootExec: Session.Exec in a root container (pid-file wrapper,
// exec create, attach, stream, inspect) against SDK exec create,
// start-attached, inspect.
func BenchmarkRootExec(b *testing.B) {
	d := newDocker(b, Config{})
	s, err := d.Open(context.Background(), contract.OpenRequest{RunID: runPrefix + "bench-root", Workspace: b.TempDir(),
		Workflow: rootWorkflow()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	sess := s.(*Session)
	cli := d.Client()
	ctx := context.Background()
	direct := func() {
		created, err := cli.ContainerExecCreate(ctx, sess.ID(), container.ExecOptions{Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true})
		if err != nil {
			b.Fatal(err)
		}
		hj, err := cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
		if err != nil {
			b.Fatal(err)
		}
		<-streams(hj, nil, nil, nil)
		hj.Close()
		for {
			ins, err := cli.ContainerExecInspect(ctx, created.ID)
			if err != nil {
				b.Fatal(err)
			}
			if !ins.Running {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	viaHookrun := func() {
		if res, err := sess.Exec(ctx, contract.ExecRequest{RunID: runPrefix + "bench-root", StepID: "b", Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
			b.Fatalf("exit %d, err %v", res.ExitCode, err)
		}
	}
	compare(b, viaHookrun, direct)
}

// compare times a and baseline alternately, b.N times each, and reports
// a's and baseline's time per op and their ratio.
func compare(b *testing.B, a, baseline func()) {
	a()
	baseline() // warm up both paths
	var ta, tb time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		first, second, t1, t2 := a, baseline, &ta, &tb
		if i%2 == 1 {
			first, second, t1, t2 = baseline, a, &tb, &ta
		}
		start := time.Now()
		first()
		mid := time.Now()
		second()
		*t1 += mid.Sub(start)
		*t2 += time.Since(mid)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(ta.Nanoseconds())/n, "hookrun-ns/op")
	b.ReportMetric(float64(tb.Nanoseconds())/n, "sdk-ns/op")
	b.ReportMetric(float64(ta)/float64(tb), "hookrun/sdk")
	b.ReportMetric(float64((ta-tb).Nanoseconds())/n, "overhead-ns/op")
}
