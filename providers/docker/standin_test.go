package docker

import (
	"context"
	"testing"
	"time"

	"github.com/hookrun/hookrun/providers/docker/dockertest"
)

// TestStandInImage: a stand-in for an image a documented example names is
// built only when the daemon lacks that name, carries the files asked for,
// never replaces an existing image, and is removed by the test that built it.
func TestStandInImage(t *testing.T) {
	needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := dockertest.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	const ref = "hookrun-test-standin:1"
	s, err := dockertest.EnsureStandIn(ctx, cli, ref, map[string]string{"etc/alpine-release": "3.20.0\n"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Created {
		t.Fatalf("%s existed before the test; remove it and run again", ref)
	}
	defer s.Remove(ctx, cli) //nolint:errcheck // checked below
	info, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config == nil || info.Config.Labels[dockertest.StandInLabel] != "1" {
		t.Fatalf("stand-in not labelled %s: %+v", dockertest.StandInLabel, info.Config)
	}
	again, err := dockertest.EnsureStandIn(ctx, cli, ref, nil)
	if err != nil || again.Created {
		t.Fatalf("second EnsureStandIn = %+v, %v; want the existing image kept", again, err)
	}
	if err := again.Remove(ctx, cli); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		t.Fatalf("Remove of an image EnsureStandIn did not build removed it: %v", err)
	}
	if err := s.Remove(ctx, cli); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		t.Fatal("stand-in still present after Remove")
	}
}
