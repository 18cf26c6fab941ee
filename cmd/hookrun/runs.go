package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookrun/hookrun/queue"
	"github.com/hookrun/hookrun/workflows"
)

// newRunsCommand is `hookrun runs list|get|logs|cancel|rerun`.
func newRunsCommand() *cobra.Command {
	var f clientFlags
	c := &cobra.Command{
		Use:   "runs",
		Short: "list, inspect, follow, cancel and re-run runs through the API",
		Long: "Talk to a hookrun server's API (/api/v1): --server or " + envServer + " names it (default " + defaultServer + "),\n" +
			envToken + " (or --token-file) holds its api.token. Tables for people, --json for scripts.",
		RunE: groupRunE,
	}
	f.register(c)
	c.AddCommand(runsList(&f), runsGet(&f), runsLogs(&f), runsCancel(&f), runsRerun(&f))
	return c
}

// listAnswer is GET /api/v1/runs: {"runs": [...]} and, from servers with
// paging, "next_cursor".
type listAnswer struct {
	Runs       []*queue.RunRecord `json:"runs"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

func runsList(f *clientFlags) *cobra.Command {
	var workflow, repo, status, cursor string
	var pr, limit int
	c := &cobra.Command{
		Use:   "list",
		Short: "list runs, newest first",
		Example: "  hookrun runs list --workflow pr-review --status failed\n" +
			"  hookrun runs list --repo octo/demo --pr 12 --json | jq -r '.runs[].id'",
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			set := func(k, v string) {
				if v != "" {
					q.Set(k, v)
				}
			}
			set("workflow", workflow)
			set("repo", repo)
			set("status", status)
			set("cursor", cursor)
			if pr > 0 {
				q.Set("pr", strconv.Itoa(pr))
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			path := "/api/v1/runs"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			var ans listAnswer
			raw, err := cl.callJSON(c.Context(), http.MethodGet, path, &ans)
			if err != nil {
				return err
			}
			if pr > 0 {
				// A server without the pr filter ignores it: keep that
				// pull request's runs here too.
				kept := ans.Runs[:0]
				for _, r := range ans.Runs {
					if r.Event.PullRequest != nil && r.Event.PullRequest.Number == pr {
						kept = append(kept, r)
					}
				}
				if len(kept) != len(ans.Runs) {
					ans.Runs = kept
					raw, _ = json.Marshal(ans)
				}
			}
			if f.json {
				return printJSON(c.OutOrStdout(), raw)
			}
			printRunTable(c.OutOrStdout(), ans.Runs, time.Now())
			if ans.NextCursor != "" {
				fmt.Fprintf(c.ErrOrStderr(), "more runs: --cursor %s\n", ans.NextCursor)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&workflow, "workflow", "", "only runs of this workflow")
	fl.StringVar(&repo, "repo", "", "only runs for this repository (owner/name)")
	fl.StringVar(&status, "status", "", "only runs in this status (queued, running, succeeded, partially_succeeded, failed, cancelled)")
	fl.IntVar(&pr, "pr", 0, "only runs of this pull/merge request number")
	fl.IntVar(&limit, "limit", 0, "at most this many runs (server default 100, at most 1000)")
	fl.StringVar(&cursor, "cursor", "", "the page after this cursor (printed by the previous page)")
	_ = c.RegisterFlagCompletionFunc("status", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"queued", "running", "succeeded", "partially_succeeded", "failed", "cancelled"}, cobra.ShellCompDirectiveNoFileComp
	})
	return c
}

// printRunTable prints runs as a table with the columns ID, WORKFLOW,
// STATUS, REPO, PR, EVENT, CREATED, DURATION.
func printRunTable(w io.Writer, runs []*queue.RunRecord, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWORKFLOW\tSTATUS\tREPO\tPR\tEVENT\tCREATED\tDURATION")
	for _, r := range runs {
		pr := "-"
		if r.Event.PullRequest != nil {
			pr = "#" + strconv.Itoa(r.Event.PullRequest.Number)
		}
		event := string(r.Event.Kind)
		if r.Event.Action != "" {
			event += "." + r.Event.Action
		}
		if event == "" {
			event = "api"
		}
		status := string(r.Status)
		if r.RerunOf != "" {
			status += " (rerun)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Workflow, status, orDash(r.Repo), pr, event, ago(r.CreatedAt, now), duration(r, now))
	}
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// duration is how long a run ran (so far).
func duration(r *queue.RunRecord, now time.Time) string {
	if r.StartedAt == nil {
		return "-"
	}
	end := now
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	return end.Sub(*r.StartedAt).Round(time.Millisecond).String()
}

func runsGet(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get RUN_ID",
		Short: "show one run: its status, event, links and steps",
		Args:  exactArgs(1, "a run id"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			var rec queue.RunRecord
			raw, err := cl.callJSON(c.Context(), http.MethodGet, "/api/v1/runs/"+url.PathEscape(args[0]), &rec)
			if err != nil {
				return err
			}
			if f.json {
				return printJSON(c.OutOrStdout(), raw)
			}
			printRun(c.OutOrStdout(), &rec, time.Now())
			return nil
		},
	}
}

// printRun prints one record for people: fields, then a step table.
func printRun(w io.Writer, r *queue.RunRecord, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("ID", r.ID)
	row("Workflow", r.Workflow)
	row("Status", string(r.Status))
	row("Attempt", strconv.Itoa(r.Attempt))
	row("Repo", r.Repo)
	if r.Event.PullRequest != nil {
		row("Pull request", fmt.Sprintf("#%d %s", r.Event.PullRequest.Number, r.Event.PullRequest.Title))
	}
	row("Event", string(r.Event.Forge)+" "+string(r.Event.Kind)+" "+r.Event.Action)
	row("Delivery", r.Event.DeliveryID)
	row("Head", r.HeadSHA)
	row("Created", r.CreatedAt.Format(time.RFC3339)+" ("+ago(r.CreatedAt, now)+")")
	row("Duration", duration(r, now))
	row("Re-run of", r.RerunOf)
	for _, id := range r.Reruns {
		row("Re-run by", id)
	}
	if r.CommentID != 0 {
		row("Comment", strconv.FormatInt(r.CommentID, 10))
	}
	row("Error", r.Error)
	_ = tw.Flush()
	if len(r.Steps) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tEXIT\tDURATION")
	for _, s := range r.Steps {
		exit, d := "-", "-"
		if s.ExitCode != nil {
			exit = strconv.Itoa(*s.ExitCode)
		}
		if s.StartedAt != nil && s.FinishedAt != nil {
			d = s.FinishedAt.Sub(*s.StartedAt).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.ID, s.Status, exit, d)
	}
	_ = tw.Flush()
}

func runsLogs(f *clientFlags) *cobra.Command {
	var follow bool
	c := &cobra.Command{
		Use:   "logs RUN_ID",
		Short: "print a run's step output; -f follows it until the run ends",
		Args:  exactArgs(1, "a run id"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			path := "/api/v1/runs/" + url.PathEscape(args[0]) + "/logs"
			out := c.OutOrStdout()
			if !follow {
				data, err := cl.call(c.Context(), http.MethodGet, path)
				if err != nil {
					return err
				}
				_, err = out.Write(data)
				return err
			}
			var final string
			err = cl.follow(c.Context(), path+"?follow=1", func(ev sseEvent) bool {
				switch ev.name {
				case "log":
					var l queue.LogLine
					if json.Unmarshal([]byte(ev.data), &l) != nil {
						return true
					}
					if f.json {
						fmt.Fprintln(out, ev.data)
						return true
					}
					fmt.Fprintf(out, "[%s] ", l.StepID)
					if l.Stream != queue.StreamStdout {
						fmt.Fprintf(out, "(%s) ", l.Stream)
					}
					fmt.Fprintln(out, l.Text)
				case "end":
					var end struct {
						Status workflows.Status `json:"status"`
					}
					_ = json.Unmarshal([]byte(ev.data), &end)
					final = string(end.Status)
					return false
				}
				return true
			})
			if err != nil {
				return err
			}
			if final != "" && !f.json {
				fmt.Fprintf(c.ErrOrStderr(), "run %s %s\n", args[0], final)
			}
			return nil
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "stream the output (Server-Sent Events) until the run ends")
	return c
}

func runsCancel(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN_ID",
		Short: "ask a queued or running run to stop",
		Args:  exactArgs(1, "a run id"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			var ans map[string]string
			raw, err := cl.callJSON(c.Context(), http.MethodPost, "/api/v1/runs/"+url.PathEscape(args[0])+"/cancel", &ans)
			if err != nil {
				return err
			}
			if f.json {
				return printJSON(c.OutOrStdout(), raw)
			}
			fmt.Fprintf(c.OutOrStdout(), "run %s: %s\n", ans["id"], ans["status"])
			return nil
		},
	}
}

// rerunAnswer is POST /api/v1/runs/{id}/rerun.
type rerunAnswer struct {
	Run             string `json:"run"`
	Workflow        string `json:"workflow"`
	RerunOf         string `json:"rerun_of"`
	WorkflowChanged bool   `json:"workflow_changed"`
}

func runsRerun(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rerun RUN_ID",
		Short: "start a new run of a finished run's workflow on the same event",
		Long: "Start a new run of the workflow (as loaded now) on the same event as a finished run.\n" +
			"The records link both ways (rerun_of, reruns) and the new run edits the same sticky comment.\n" +
			"The API token is an operator's: the workflow's authorize policy is not applied.",
		Args: exactArgs(1, "a run id"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			var ans rerunAnswer
			raw, err := cl.callJSON(c.Context(), http.MethodPost, "/api/v1/runs/"+url.PathEscape(args[0])+"/rerun", &ans)
			if err != nil {
				return err
			}
			if f.json {
				return printJSON(c.OutOrStdout(), raw)
			}
			fmt.Fprintf(c.OutOrStdout(), "run %s queued: re-runs %s (workflow %s)\n", ans.Run, ans.RerunOf, ans.Workflow)
			if ans.WorkflowChanged {
				fmt.Fprintf(c.ErrOrStderr(), "note: workflow %s changed since run %s; the re-run uses the one loaded now\n", ans.Workflow, ans.RerunOf)
			}
			return nil
		},
	}
}

// newDeliveriesCommand is `hookrun deliveries replay`.
func newDeliveriesCommand() *cobra.Command {
	var f clientFlags
	c := &cobra.Command{
		Use:   "deliveries",
		Short: "replay a stored webhook delivery through the API",
		RunE:  groupRunE,
	}
	f.register(c)
	var forge string
	replay := &cobra.Command{
		Use:   "replay DELIVERY_ID",
		Short: "match a stored delivery again against the workflows loaded now and queue what matches",
		Long: "Match a stored webhook delivery (X-GitHub-Delivery, or the GitLab dedupe key) again against the\n" +
			"workflows loaded now, under a new delivery id (<id>:replay:<n>), and queue the runs that match.",
		Args: exactArgs(1, "a delivery id"),
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := f.client()
			if err != nil {
				return err
			}
			var ans struct {
				Delivery string `json:"delivery"`
				ReplayOf string `json:"replay_of"`
				Runs     []struct {
					ID       string `json:"id"`
					Workflow string `json:"workflow"`
				} `json:"runs"`
				Reason string `json:"reason"`
			}
			path := "/api/v1/deliveries/" + url.PathEscape(args[0]) + "/replay?forge=" + url.QueryEscape(forge)
			raw, err := cl.callJSON(c.Context(), http.MethodPost, path, &ans)
			if err != nil {
				return err
			}
			if f.json {
				return printJSON(c.OutOrStdout(), raw)
			}
			out := c.OutOrStdout()
			if len(ans.Runs) == 0 {
				fmt.Fprintf(out, "replay %s queued no run: %s\n", ans.Delivery, ans.Reason)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tWORKFLOW\tDELIVERY")
			for _, r := range ans.Runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.Workflow, ans.Delivery)
			}
			return tw.Flush()
		},
	}
	replay.Flags().StringVar(&forge, "forge", "github", "the forge the delivery came from: github or gitlab")
	_ = replay.RegisterFlagCompletionFunc("forge", cobra.FixedCompletions([]string{"github", "gitlab"}, cobra.ShellCompDirectiveNoFileComp))
	c.AddCommand(replay)
	return c
}
