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

	"github.com/hookrun/hookrun/stores"
	"github.com/hookrun/hookrun/workflows"
)

// newRunsCommand is `hookrun runs list|get|logs|cancel|rerun`.
func newRunsCommand() *cobra.Command {
	f, c := clientGroup("runs", "list, inspect, follow, cancel and re-run runs through the API")
	c.Long = "Talk to a hookrun server's API (/api/v1): --server or " + envServer + " names it (default " + defaultServer + "),\n" +
		envToken + " (or --token-file) holds its api.token. Tables for people, --json for scripts."
	c.AddCommand(runsList(f), runsGet(f), runsLogs(f), runsCancel(f), runsRerun(f))
	return c
}

// listAnswer is GET /api/v1/runs: {"runs": [...]} and, from servers with
// paging, "next_cursor".
type listAnswer struct {
	Runs       []*stores.RunRecord `json:"runs"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

// runStatuses are the statuses a run can be in (runs list --status).
var runStatuses = []string{
	string(workflows.StatusQueued), string(workflows.StatusRunning), string(workflows.StatusSucceeded),
	string(workflows.StatusPartiallySucceeded), string(workflows.StatusFailed), string(workflows.StatusCancelled),
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
			filters := map[string]string{"workflow": workflow, "repo": repo, "status": status, "cursor": cursor}
			if pr > 0 {
				filters["pr"] = strconv.Itoa(pr)
			}
			path := listPath("/api/v1/runs", filters, limit)
			var ans listAnswer
			raw, err := f.callJSON(c.Context(), http.MethodGet, path, &ans)
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
			printMore(c.ErrOrStderr(), "runs", ans.NextCursor)
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&workflow, "workflow", "", "only runs of this workflow")
	fl.StringVar(&repo, "repo", "", "only runs for this repository (owner/name)")
	choiceFlag(c, &status, "status", "only runs in this status", runStatuses)
	fl.IntVar(&pr, "pr", 0, "only runs of this pull/merge request number")
	pageFlags(c, "runs", &limit, &cursor)
	return c
}

// printRunTable prints runs as a table with the columns ID, WORKFLOW,
// STATUS, REPO, PR, EVENT, CREATED, DURATION.
func printRunTable(w io.Writer, runs []*stores.RunRecord, now time.Time) {
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
func duration(r *stores.RunRecord, now time.Time) string {
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
	return runCommand(f, "get", "show one run: its status, event, links and steps", http.MethodGet, "",
		func(c *cobra.Command, rec *stores.RunRecord) { printRun(c.OutOrStdout(), rec, time.Now()) })
}

// printRun prints one record for people: fields, then a step table.
func printRun(w io.Writer, r *stores.RunRecord, now time.Time) {
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
					var l stores.LogLine
					if json.Unmarshal([]byte(ev.data), &l) != nil {
						return true
					}
					if f.json {
						fmt.Fprintln(out, ev.data)
						return true
					}
					fmt.Fprintf(out, "[%s] ", l.StepID)
					if l.Stream != stores.StreamStdout {
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
	return runCommand(f, "cancel", "ask a queued or running run to stop", http.MethodPost, "/cancel",
		func(c *cobra.Command, ans *map[string]string) {
			fmt.Fprintf(c.OutOrStdout(), "run %s: %s\n", (*ans)["id"], (*ans)["status"])
		})
}

// rerunAnswer is POST /api/v1/runs/{id}/rerun.
type rerunAnswer struct {
	Run             string `json:"run"`
	Workflow        string `json:"workflow"`
	RerunOf         string `json:"rerun_of"`
	WorkflowChanged bool   `json:"workflow_changed"`
}

func runsRerun(f *clientFlags) *cobra.Command {
	c := runCommand(f, "rerun", "start a new run of a finished run's workflow on the same event", http.MethodPost, "/rerun",
		func(c *cobra.Command, ans *rerunAnswer) {
			fmt.Fprintf(c.OutOrStdout(), "run %s queued: re-runs %s (workflow %s)\n", ans.Run, ans.RerunOf, ans.Workflow)
			if ans.WorkflowChanged {
				fmt.Fprintf(c.ErrOrStderr(), "note: workflow %s changed since run %s; the re-run uses the one loaded now\n", ans.Workflow, ans.RerunOf)
			}
		})
	c.Long = "Start a new run of the workflow (as loaded now) on the same event as a finished run.\n" +
		"The records link both ways (rerun_of, reruns) and the new run edits the same sticky comment.\n" +
		"The API token is an operator's: the workflow's authorize policy is not applied."
	return c
}

// runCommand is `hookrun runs <verb> RUN_ID`: it calls the API on one run
// (method on /api/v1/runs/{id} + suffix) and prints its answer, as it came
// with --json, else through human.
func runCommand[T any](f *clientFlags, verb, short, method, suffix string, human func(*cobra.Command, *T)) *cobra.Command {
	return oneCommand(f, oneCall{verb: verb, arg: "RUN_ID", what: "a run id", short: short, method: method, collection: "runs", suffix: suffix},
		func(c *cobra.Command, ans *T) error {
			human(c, ans)
			return nil
		})
}

// oneCall is a command on one resource of the API: `verb ARG` calls
// method on /api/v1/<collection>/{ARG}<suffix>, with query's non-empty
// values.
type oneCall struct {
	verb, arg, what, short, long string
	method, collection, suffix   string
	query                        map[string]*string // flag values, read when the command runs
}

// oneCommand is the command of call: it prints the answer as it came with
// --json, else through human.
func oneCommand[T any](f *clientFlags, call oneCall, human func(*cobra.Command, *T) error) *cobra.Command {
	return &cobra.Command{
		Use:   call.verb + " " + call.arg,
		Short: call.short,
		Long:  call.long,
		Args:  exactArgs(1, call.what),
		RunE: func(c *cobra.Command, args []string) error {
			q := map[string]string{}
			for k, v := range call.query {
				q[k] = *v
			}
			path := listPath("/api/v1/"+call.collection+"/"+url.PathEscape(args[0])+call.suffix, q, 0)
			return answer(f, c, call.method, path, func(ans *T) error { return human(c, ans) })
		},
	}
}

// replayAnswer is POST /api/v1/deliveries/{id}/replay.
type replayAnswer struct {
	Delivery string `json:"delivery"`
	ReplayOf string `json:"replay_of"`
	Runs     []struct {
		ID       string `json:"id"`
		Workflow string `json:"workflow"`
	} `json:"runs"`
	Reason string `json:"reason"`
}

// newDeliveriesCommand is `hookrun deliveries list|get|replay` (list and
// get: deliveries.go).
func newDeliveriesCommand() *cobra.Command {
	f, c := clientGroup("deliveries", "list, inspect and replay stored webhook deliveries through the API")
	var forge string
	replay := oneCommand(f, oneCall{verb: "replay", arg: "DELIVERY_ID", what: "a delivery id",
		short: "match a stored delivery again against the workflows loaded now and queue what matches",
		long: "Match a stored webhook delivery (X-GitHub-Delivery, or the GitLab dedupe key) again against the\n" +
			"workflows loaded now, under a new delivery id (<id>:replay:<n>), and queue the runs that match.",
		method: http.MethodPost, collection: "deliveries", suffix: "/replay", query: map[string]*string{"forge": &forge}},
		func(c *cobra.Command, ans *replayAnswer) error {
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
		})
	forgeFlag(replay, &forge)
	c.AddCommand(deliveriesList(f), deliveriesGet(f), replay)
	return c
}
