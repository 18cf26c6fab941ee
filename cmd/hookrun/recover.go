package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/hookrun/hookrun/internal/app"
	"github.com/hookrun/hookrun/providers/github/recovery"
)

var cmdRecover = flagCommand(flagSpec{name: "recover", synopsis: "", maxArgs: -1,
	description: `Ask GitHub to redeliver the webhook deliveries that failed (hookrun was down,
answered 5xx, or did not answer in time) and that hookrun has not stored. It reads
the App's webhook (github.app_id) and the repository webhooks of
github.recover.hooks through GitHub's API; redeliveries keep their delivery id, so
ingress deduplicates them. Exits 1 if a webhook could not be read or a
redelivery was refused. GitLab has no such API (docs/operations.md).`},
	func(fs *flag.FlagSet) commandFunc {
		config := fs.String("config", "", "configuration file (the same as serve's)")
		since := fs.Duration("since", 0, "how far back to look (default github.recover.since, else 6h; GitHub keeps 72h)")
		dryRun := fs.Bool("dry-run", false, "list what would be redelivered without asking for it")
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			cfg, err := loadConfig(*config, os.LookupEnv)
			if err != nil {
				fmt.Fprintf(stderr, "hookrun recover: %v\n", err)
				return exitUsage
			}
			logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			rep, err := app.Recover(ctx, cfg, *since, *dryRun, logger)
			printRecovery(stdout, rep)
			if rep.Unstored {
				fmt.Fprintln(stderr, "note: no external NATS (nats.url): failed deliveries hookrun may have stored were asked for again; ingress deduplicates them")
			}
			code := 0
			if err != nil {
				fmt.Fprintf(stderr, "hookrun recover: %v\n", err)
				code = 1
			}
			for _, o := range rep.Failed {
				if o.Did == recovery.RedeliverFailed {
					fmt.Fprintf(stderr, "hookrun recover: %s: %v\n", o.GUID, o.Err)
					code = 1
				}
			}
			return code
		}
	})

func printRecovery(w io.Writer, rep recovery.Report) {
	fmt.Fprintf(w, "%d delivery attempts listed, %d deliveries failed\n", rep.Listed, len(rep.Failed))
	if len(rep.Failed) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DELIVERY\tEVENT\tSTATUS\tAT\tWEBHOOK\tDONE")
	for _, o := range rep.Failed {
		code := fmt.Sprint(o.StatusCode)
		if o.StatusCode == 0 {
			code = "no answer"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", o.GUID, o.Event, code, o.At.UTC().Format(time.RFC3339), o.Hook, o.Did)
	}
	_ = tw.Flush()
}
