package main

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookrun/hookrun/stores"
)

// deliveriesAnswer is GET /api/v1/deliveries.
type deliveriesAnswer struct {
	Deliveries []stores.DeliverySummary `json:"deliveries"`
	NextCursor string                   `json:"next_cursor,omitempty"`
}

// deliveriesList is `hookrun deliveries list`.
func deliveriesList(f *clientFlags) *cobra.Command {
	var forge, repo, event, outcome, cursor string
	var limit int
	c := &cobra.Command{
		Use:   "list",
		Short: "list stored webhook deliveries and what became of each, newest first",
		Example: "  hookrun deliveries list --outcome refused\n" +
			"  hookrun deliveries list --repo octo/demo --event pull_request --json | jq -r '.deliveries[].id'",
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			path := listPath("/api/v1/deliveries", map[string]string{"forge": forge, "repo": repo, "event": event, "outcome": outcome, "cursor": cursor}, limit)
			return answer(f, c, http.MethodGet, path, func(ans *deliveriesAnswer) error {
				tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tFORGE\tEVENT\tREPO\tOUTCOME\tRUNS\tRECEIVED\tREASON")
				now := time.Now()
				for _, d := range ans.Deliveries {
					// A delivery hookrun does not handle has no kind: its forge's event name.
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Forge, orDash(cmp.Or(d.Kind, d.Event)), orDash(d.Repo), d.Outcome, d.Runs,
						ago(d.ReceivedAt, now), d.Reason)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				printMore(c.ErrOrStderr(), "deliveries", ans.NextCursor)
				return nil
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&forge, "forge", "", "only deliveries from this forge (github, gitlab, gitea)")
	fl.StringVar(&repo, "repo", "", "only deliveries for this repository (owner/name)")
	fl.StringVar(&event, "event", "", "only deliveries of this event (pull_request, push, comment, ...)")
	choiceFlag(c, &outcome, "outcome", "only deliveries with this outcome", stores.Outcomes)
	pageFlags(c, "deliveries", &limit, &cursor)
	return c
}

// listPath is a list route with the filters given (the empty ones left
// out) and a positive limit as its query.
func listPath(route string, filters map[string]string, limit int) string {
	q := url.Values{}
	for k, v := range filters {
		if v != "" {
			q.Set(k, v)
		}
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if len(q) == 0 {
		return route
	}
	return route + "?" + q.Encode()
}

// pageFlags are a list command's --limit and --cursor.
func pageFlags(c *cobra.Command, what string, limit *int, cursor *string) {
	fl := c.Flags()
	fl.IntVar(limit, "limit", 0, "at most this many "+what+" (server default 100, at most 1000)")
	fl.StringVar(cursor, "cursor", "", "the page after this cursor (printed by the previous page)")
}

// choiceFlag adds the string flag name, whose value is one of choices:
// usage lists them and the shell completes them.
func choiceFlag(c *cobra.Command, value *string, name, usage string, choices []string) {
	c.Flags().StringVar(value, name, "", usage+" ("+strings.Join(choices, ", ")+")")
	_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(choices, cobra.ShellCompDirectiveNoFileComp))
}

// printMore tells on w how to ask for the next page, if there is one.
func printMore(w io.Writer, what, next string) {
	if next != "" {
		fmt.Fprintf(w, "more %s: --cursor %s\n", what, next)
	}
}

// deliveryView is GET /api/v1/deliveries/:id as the CLI prints it.
type deliveryView struct {
	stores.Received
	Outcome    string `json:"outcome"`
	Normalized *struct {
		Kind   string `json:"kind"`
		Action string `json:"action"`
	} `json:"normalized"`
}

// deliveriesGet is `hookrun deliveries get`.
func deliveriesGet(f *clientFlags) *cobra.Command {
	var forge string
	c := oneCommand(f, oneCall{verb: "get", arg: "DELIVERY_ID", what: "a delivery id",
		short:  "show one stored delivery: its headers, event, every workflow considered and why, its runs and replays",
		method: http.MethodGet, collection: "deliveries", query: map[string]*string{"forge": &forge}},
		func(c *cobra.Command, v *deliveryView) error {
			printDelivery(c.OutOrStdout(), v)
			return nil
		})
	forgeFlag(c, &forge)
	return c
}

// forgeFlag is --forge of a command on one stored delivery.
func forgeFlag(c *cobra.Command, forge *string) {
	c.Flags().StringVar(forge, "forge", "", "the forge the delivery came from (default: the server's default forge)")
}

// printDelivery prints one delivery for people: fields, headers, then the
// workflows, runs and replays as tables.
func printDelivery(w io.Writer, v *deliveryView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, val string) {
		if val != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, val)
		}
	}
	event := v.Event
	if v.Normalized != nil && v.Normalized.Kind != "" {
		event += " (" + v.Normalized.Kind
		if v.Normalized.Action != "" {
			event += "." + v.Normalized.Action
		}
		event += ")"
	}
	row("ID", v.ID)
	row("Forge", string(v.Forge))
	row("Event", event)
	row("Repo", v.Repo)
	row("Outcome", v.Outcome)
	row("Reason", v.Reason)
	row("Received", v.ReceivedAt.Format(time.RFC3339))
	names := make([]string, 0, len(v.Headers))
	for k := range v.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		row("  "+k, v.Headers[k])
	}
	_ = tw.Flush()
	if len(v.Workflows) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKFLOW\tMATCHED\tRAN\tREASON")
		for _, c := range v.Workflows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", orDash(c.Workflow), yesNo(c.Matched), yesNo(c.Ran), orDash(c.Reason))
		}
		_ = tw.Flush()
	}
	if len(v.Runs) > 0 || len(v.Replays) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tWORKFLOW\tDELIVERY")
		for _, r := range v.Runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Workflow, v.ID)
		}
		for _, rp := range v.Replays {
			if len(rp.Runs) == 0 {
				fmt.Fprintf(tw, "-\t-\t%s\n", rp.ID)
			}
			for _, r := range rp.Runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Workflow, rp.ID)
			}
		}
		_ = tw.Flush()
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
