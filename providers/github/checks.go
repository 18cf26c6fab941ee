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
// summary and the run's findings as annotations (whether or not the
// workflow sets report.review, which is about inline comments),
// AnnotationsPerRequest per PATCH and at most MaxAnnotations; the output's
// text says how many findings are not annotated. The final phase finds
// the run's check run by its name and external id (GET
// .../commits/{sha}/check-runs), so a final report retried from the
// outbox completes the same one; one is created when none is found.
//
// GitHub appends the annotations of every PATCH to the check run's, so a
// retried final report sends only those past the check run's
// output.annotations_count: the annotations are in the findings' order,
// which the stored report keeps, so each goes out once.
func (r *Reporter) checkRun(ctx context.Context, c *gh.Client, owner, repo, sha string, rep *contract.RunReport, sum *review.Summary) error {
	details := render.RunURL(r.cfg.RunURL, rep.RunID)
	if rep.Phase == contract.PhaseStart {
		_, err := r.createCheckRun(ctx, c, owner, repo, sha, rep, details)
		return err
	}
	found, err := r.findCheckRun(ctx, c, owner, repo, sha, rep)
	if err != nil {
		return err
	}
	if found.ID == 0 {
		if found.ID, err = r.createCheckRun(ctx, c, owner, repo, sha, rep, details); err != nil {
			return err
		}
	}
	var fs []contract.Finding
	if rep.Results != nil {
		fs = rep.Results.Findings
	}
	notes, text := annotations(fs)
	out := checkOutput{Title: cutString(render.Description(rep, checkTitleLimit), checkTitleLimit),
		Summary: render.Comment(rep, render.Options{Limit: checkSummaryLimit, RunURL: details, Review: sum}), Text: text}
	notes = notes[min(found.Annotations, len(notes)):] // sent by an earlier attempt
	first := min(len(notes), AnnotationsPerRequest)
	done := out
	done.Annotations = notes[:first]
	upd := checkUpdate{Status: "completed", Conclusion: conclusion(rep.Status, rep.TimedOut), DetailsURL: details, Output: &done}
	if err := r.patchCheckRun(ctx, c, owner, repo, found.ID, upd); err != nil {
		return err
	}
	for lo := first; lo < len(notes); lo += AnnotationsPerRequest {
		more := out
		more.Annotations = notes[lo:min(lo+AnnotationsPerRequest, len(notes))]
		if err := r.patchCheckRun(ctx, c, owner, repo, found.ID, checkUpdate{Output: &more}); err != nil {
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
	Text        string            `json:"text,omitempty"`
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
// takes them (plain text: GitHub does not render Markdown in them), in
// the findings' order and at most MaxAnnotations; text says which
// findings are not among them ("" when all are).
func annotations(fs []contract.Finding) (out []checkAnnotation, text string) {
	over, unplaced := 0, 0
	for _, f := range fs {
		switch {
		case f.Path == "" || f.StartLine <= 0:
			unplaced++
			continue
		case len(out) == MaxAnnotations:
			over++
			continue
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
	var notes []string
	if over > 0 {
		notes = append(notes, fmt.Sprintf("%s over the limit of %s per check run %s not annotated.",
			render.Plural(over, "finding"), render.Plural(MaxAnnotations, "annotation"), isAre(over)))
	}
	if unplaced > 0 {
		notes = append(notes, fmt.Sprintf("%s without a file and line %s not annotated.", render.Plural(unplaced, "finding"), isAre(unplaced)))
	}
	if len(notes) == 0 {
		return out, ""
	}
	return out, fmt.Sprintf("%s of %s %s annotations. %s", render.Thousands(len(out)), render.Plural(len(fs), "finding"), isAre(len(out)), strings.Join(notes, " "))
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
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

// foundCheckRun is the run's check run as listed: its id (0: none) and
// how many annotations it holds.
type foundCheckRun struct {
	ID          int64
	Annotations int
}

// findCheckRun is the run's check run on sha.
func (r *Reporter) findCheckRun(ctx context.Context, c *gh.Client, owner, repo, sha string, rep *contract.RunReport) (foundCheckRun, error) {
	name := checkName(rep)
	for page := 1; page > 0; {
		var out struct {
			CheckRuns []struct {
				ID         int64  `json:"id"`
				ExternalID string `json:"external_id"`
				Output     struct {
					AnnotationsCount int `json:"annotations_count"`
				} `json:"output"`
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
			return foundCheckRun{}, fmt.Errorf("listing check runs %s on %s: %w", name, short(sha), err)
		}
		for _, cr := range out.CheckRuns {
			if cr.ExternalID == rep.RunID {
				return foundCheckRun{ID: cr.ID, Annotations: cr.Output.AnnotationsCount}, nil
			}
		}
		page = next
	}
	return foundCheckRun{}, nil
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
