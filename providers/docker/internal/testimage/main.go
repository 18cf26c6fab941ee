// Command testimage builds the local Docker test image
// (hookrun-test-busybox:latest) from Debian's busybox-static, without a
// registry, when it is missing: `make test-image` runs it. -force rebuilds.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hookrun/hookrun/providers/docker/dockertest"
)

func main() {
	ref := flag.String("image", dockertest.Ref, "image reference to build")
	force := flag.Bool("force", false, "rebuild even when the image exists")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := dockertest.Client(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testimage:", err)
		os.Exit(1)
	}
	defer cli.Close()
	if err := dockertest.EnsureRef(ctx, cli, *ref, *force); err != nil {
		fmt.Fprintln(os.Stderr, "testimage:", err)
		os.Exit(1)
	}
	fmt.Println(*ref)
}
