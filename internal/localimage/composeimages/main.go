// Command composeimages builds the images docker-compose.yml runs without a
// registry (internal/localimage) and prints the environment that selects
// them: `make compose-images` runs it from the module's root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/hookrun/hookrun/internal/localimage"
	"github.com/hookrun/hookrun/providers/docker/dockertest"
)

func main() {
	var cfg localimage.Config
	flag.StringVar(&cfg.HookrunRef, "hookrun", localimage.DefaultHookrunRef, "name of the hookrun image")
	flag.StringVar(&cfg.NATSRef, "nats", localimage.DefaultNATSRef, "name of the nats image")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli, err := dockertest.Client(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "composeimages:", err)
		os.Exit(1)
	}
	defer cli.Close()
	if err := localimage.Build(ctx, cli, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "composeimages:", err)
		os.Exit(1)
	}
	fmt.Printf("HOOKRUN_IMAGE=%s NATS_IMAGE=%s\n", cfg.HookrunRef, cfg.NATSRef)
}
