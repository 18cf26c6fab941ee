package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/hookrun/hookrun/providers/internal/render"
	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// Limits of the Checks API.
const (
	// AnnotationsPerRequest is how many annotations one check run update
	// takes.
	AnnotationsPerRequest = 50
	// MaxAnnotations is how many annotations hookrun sends per run.
	MaxAnnotations = 1000
	// checkSummaryLimit is output.summary's limit in characters.
	checkSummaryLimit = 65535
	checkTitleLimit   = 255
)

// checks reports whether runs are shown as check runs rather than commit
// statuses: on GitHub with an App (a token cannot write check runs).
func (r *Reporter) checks() bool { return r.app != nil && r.cfg.Dialect == nil }

// checkName is the check run of a workflow: hookrun/<workflow>, as the
// commit status's context.
func checkName(rep *contract.RunReport) string { return "hookrun/" + rep.Workflow.Name }

// checkRun shows a run as the check run hookrun/<workflow> on the head
// SHA: created in_progress at start (POST /repos/{o}/{r}/check-runs,
// external_id the run id), completed in the final phase (PATCH
// .../check-runs/{id}) with a conclusion, the rendered report as its
// summary and, when the workflow sets report.review, its findings as
// annotations, AnnotationsPerRequest per PATCH and at most
// MaxAnnotations. The final phase finds the run's check run by its
// name and external id (GET .../commits/{sha}/check-runs), so a final
// report retried from the outbox completes the same one; one is created
// when none is found.
func (r *Reporter) checkRun(ctx context.Context, c *gh.Client, owner, repo, sha string, rep *contract.RunReport, sum *review.Summary) error {
	details := render.RunURL(r.cfg.RunURL, rep.RunID)
	if rep.Phase == contract.PhaseStart {
		_, err := r.createCheckRun(ctx, c, owner, repo, sha, rep, details)
		return err
	}
	id, err := r.findCheckRun(ctx, c, owner, repo, sha, rep)
	if err != nil {
		return err
	}
	if id == 0 {
		if id, err = r.createCheckRun(ctx, c, owner, repo, sha, rep, details); err != nil {
			return err
		}
	}
	title := cutString(render.Description(rep, checkTitleLimit), checkTitleLimit)
	summary := render.Comment(rep, render.Options{Limit: checkSummaryLimit, RunURL: details, Review: sum})
	var notes []checkAnnotation
	if rep.Workflow.Report.Review != nil && rep.Results != nil {
		notes = annotations(rep.Results.Findings)
	}
	first := min(len(notes), AnnotationsPerRequest)
	upd := checkUpdate{Status: "completed", Conclusion: conclusion(rep.Status, rep.TimedOut), DetailsURL: details,
		Output: &checkOutput{Title: title, Summary: summary, Annotations: notes[:first]}}
	if err := r.patchCheckRun(ctx, c, owner, repo, id, upd); err != nil {
		return err
	}
	for lo := first; lo < len(notes); lo += AnnotationsPerRequest {
		hi := min(lo+AnnotationsPerRequest, len(notes))
		if err := r.patchCheckRun(ctx, c, owner, repo, id, checkUpdate{Output: &checkOutput{Title: title, Summary: summary, Annotations: notes[lo:hi]}}); err != nil {
			return err
		}
	}
	return nil
}

// checkCreate is the body of POST /repos/{o}/{r}/check-runs.
type checkCreate struct {
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	Status     string `json:"status"`
	ExternalID string `json:"external_id"`
	DetailsURL string `json:"details_url,omitempty"`
}

// checkUpdate is the body of PATCH /repos/{o}/{r}/check-runs/{id}.
type checkUpdate struct {
	Status     string       `json:"status,omitempty"`
	Conclusion string       `json:"conclusion,omitempty"`
	DetailsURL string       `json:"details_url,omitempty"`
	Output     *checkOutput `json:"output,omitempty"`
}

type checkOutput struct {
	Title       string            `json:"title"`
	Summary     string            `json:"summary"`
	Annotations []checkAnnotation `json:"annotations,omitempty"`
}

type checkAnnotation struct {
	Path            string `json:"path"`
	StartLine       int    `json:"start_line"`
	EndLine         int    `json:"end_line"`
	AnnotationLevel string `json:"annotation_level"`
	Message         string `json:"message"`
	Title           string `json:"title,omitempty"`
}

// annotations are the findings with a file and a line, as the Checks API
// takes them (plain text: GitHub does not render Markdown in them), at
// most MaxAnnotations.
func annotations(fs []contract.Finding) []checkAnnotation {
	var out []checkAnnotation
	for _, f := range fs {
		if f.Path == "" || f.StartLine <= 0 {
			continue
		}
		if len(out) == MaxAnnotations {
			break
		}
		level := "warning"
		switch f.Level {
		case contract.LevelError:
			level = "failure"
		case contract.LevelNote:
			level = "notice"
		}
		out = append(out, checkAnnotation{Path: f.Path, StartLine: f.StartLine, EndLine: max(f.EndLine, f.StartLine),
			AnnotationLevel: level, Message: cutString(f.Message, 64<<10), Title: cutString(f.Rule, 255)})
	}
	return out
}

// conclusion maps a run's final status to a check run conclusion; a run
// that failed at its timeout is timed_out.
func conclusion(s workflows.Status, timedOut bool) string {
	if timedOut && s == workflows.StatusFailed {
		return "timed_out"
	}
	switch s {
	case workflows.StatusSucceeded:
		return "success"
	case workflows.StatusPartiallySucceeded:
		return "neutral"
	case workflows.StatusCancelled:
		return "cancelled"
	case workflows.StatusSkipped:
		return "skipped"
	default:
		return "failure"
	}
}

func (r *Reporter) createCheckRun(ctx context.Context, c *gh.Client, owner, repo, sha string, rep *contract.RunReport, details string) (int64, error) {
	in := checkCreate{Name: checkName(rep), HeadSHA: sha, Status: "in_progress", ExternalID: rep.RunID, DetailsURL: details}
	var out struct {
		ID int64 `json:"id"`
	}
	if err := r.call(ctx, func() error {
		req, err := c.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/check-runs", owner, repo), in)
		if err != nil {
			return err
		}
		_, err = c.Do(ctx, req, &out)
		return err
	}); err != nil {
		return 0, fmt.Errorf("creating check run %s on %s: %w", in.Name, short(sha), err)
	}
	return out.ID, nil
}

// findCheckRun is the id of the run's check run on sha; 0 when none.
func (r *Reporter) findCheckRun(ctx context.Context, c *gh.Client, owner, repo, sha string, rep *contract.RunReport) (int64, error) {
	name := checkName(rep)
	for page := 1; page > 0; {
		var out struct {
			CheckRuns []struct {
				ID         int64  `json:"id"`
				ExternalID string `json:"external_id"`
			} `json:"check_runs"`
		}
		var next int
		u := fmt.Sprintf("repos/%s/%s/commits/%s/check-runs?check_name=%s&filter=all&per_page=100&page=%d", owner, repo, sha, url.QueryEscape(name), page)
		if err := r.call(ctx, func() error {
			req, err := c.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			resp, err := c.Do(ctx, req, &out)
			if resp != nil {
				next = resp.NextPage
			}
			return err
		}); err != nil {
			return 0, fmt.Errorf("listing check runs %s on %s: %w", name, short(sha), err)
		}
		for _, cr := range out.CheckRuns {
			if cr.ExternalID == rep.RunID {
				return cr.ID, nil
			}
		}
		page = next
	}
	return 0, nil
}

func (r *Reporter) patchCheckRun(ctx context.Context, c *gh.Client, owner, repo string, id int64, upd checkUpdate) error {
	if err := r.call(ctx, func() error {
		req, err := c.NewRequest(http.MethodPatch, fmt.Sprintf("repos/%s/%s/check-runs/%d", owner, repo, id), upd)
		if err != nil {
			return err
		}
		_, err = c.Do(ctx, req, nil)
		return err
	}); err != nil {
		return fmt.Errorf("updating check run %d: %w", id, err)
	}
	return nil
}

// cutString cuts s to n runes.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
