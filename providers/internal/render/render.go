// Package render builds the text hookrun shows on a forge for a run: the
// sticky comment (hidden marker, header, step checklist, final body, cut to
// the forge's size limit) and the one-line commit status description. It is
// shared by the forges' reporters and imports only workflows, the runner
// contract and the forge's Links.
package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/review"
	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// DefaultLimit is the comment size limit, in characters (Unicode code
// points), of a forge that says none (Options.Limit): the smallest a
// forge hookrun knows has.
const DefaultLimit = 65536

// Marker is the hidden first line that identifies the comment of a workflow
// on a pull/merge request or issue.
func Marker(workflow string) string { return "<!-- hookrun:" + workflow + " -->" }

// RunMarker is the hidden second line naming the run that last wrote the
// comment; `report.comment: new` finds its own comment again by it.
func RunMarker(runID string) string { return "<!-- hookrun-run:" + runID + " -->" }

// HasMarker reports whether body is the comment of workflow (its first line
// is the workflow's marker).
func HasMarker(body, workflow string) bool {
	first, _, _ := strings.Cut(body, "\n")
	return strings.TrimRight(first, "\r ") == Marker(workflow)
}

// HasRunMarker reports whether body was written for run runID.
func HasRunMarker(body, runID string) bool {
	return strings.Contains(body, "\n"+RunMarker(runID)+"\n")
}

// RunURL expands the configured run link template: "{run}" is replaced by
// the run id. An empty template gives "".
func RunURL(template, runID string) string {
	if template == "" {
		return ""
	}
	return strings.ReplaceAll(template, "{run}", runID)
}

// Options tune Comment.
type Options struct {
	Limit  int              // maximum characters of the whole comment; 0 = DefaultLimit
	RunURL string           // link on the run id ("" = none)
	Now    func() time.Time // clock for the duration of running steps; nil = time.Now
	// Links name the forge's pull requests ("merge request", "!N").
	Links forge.Links
	// Review, in the final phase of a workflow with report.review, is what
	// the review did with the run's findings: a Findings section.
	Review *review.Summary
}

// Comment renders the comment for a report: the marker line, a header with
// the workflow, status and run id, the step checklist, the run error and, in
// the final phase, r.Body. When the result would exceed o.Limit characters,
// the Body is cut (never the marker, header or checklist) and a note says so.
func Comment(r *contract.RunReport, o Options) string {
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}

	var b strings.Builder
	wf := r.Workflow.Name
	b.WriteString(Marker(wf) + "\n")
	b.WriteString(RunMarker(r.RunID) + "\n")
	fmt.Fprintf(&b, "### %s hookrun · %s · %s\n\n", icon(r.Status), wf, label(r.Status))
	run := "`" + r.RunID + "`"
	if o.RunURL != "" {
		run = "[" + run + "](" + o.RunURL + ")"
	}
	fmt.Fprintf(&b, "Run %s", run)
	if r.Attempt > 1 {
		fmt.Fprintf(&b, " · attempt %d", r.Attempt)
	}
	if r.HeadSHA != "" {
		fmt.Fprintf(&b, " · commit `%s`", short(r.HeadSHA))
	}
	b.WriteString("\n")
	if note := filesNote(r.Event); note != "" {
		b.WriteString("\n" + note + "\n")
	}
	if len(r.Steps) > 0 {
		b.WriteString("\n")
		for _, s := range r.Steps {
			b.WriteString(stepLine(s, now()) + "\n")
		}
	}
	if r.Error != "" {
		fence := review.Fence(r.Error)
		heading := "Error"
		if r.Status == workflows.StatusSkipped {
			heading = "Skipped" // not an error: the workflow's preconditions did not hold
		}
		fmt.Fprintf(&b, "\n**%s**\n\n%stext\n%s\n%s\n", heading, fence, strings.TrimRight(r.Error, "\n"), fence)
	}
	if r.Phase == contract.PhaseFinal && r.Delivery != nil {
		b.WriteString("\n" + delivery(r.Delivery, o.Links) + "\n")
	}
	if r.Phase == contract.PhaseFinal && o.Review != nil {
		b.WriteString("\n" + findings(o.Review))
	}
	if a := acted(r.Acted); r.Phase == contract.PhaseFinal && a != "" {
		b.WriteString("\n" + a + "\n")
	}
	head := b.String()

	body := ""
	if r.Phase == contract.PhaseFinal && strings.TrimSpace(r.Body) != "" {
		body = "\n" + strings.TrimRight(r.Body, "\n") + "\n"
	}
	return fit(head, body, o.Limit)
}

// findings is the Findings section of a run's comment: how many, how they
// compare with the last run's, and those the filter dropped (the first
// review.ListedMax listed) or kept off the diff's lines.
func findings(s *review.Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Findings** · %s\n\n", Plural(s.Findings, "finding"))
	if s.Error != "" {
		fmt.Fprintf(&b, "The review could not be posted: %s\n\n", review.Escape(oneLine(s.Error)))
	}
	fmt.Fprintf(&b, "%s posted · %d new, %d still present, %d gone since the last run\n",
		Plural(s.Posted, "inline comment"), s.New, s.Still, s.Gone)
	list := func(title string, fs []contract.Finding) {
		if len(fs) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s\n\n", title)
		for i, f := range fs {
			if i == review.ListedMax {
				fmt.Fprintf(&b, "- … and %d more\n", len(fs)-i)
				break
			}
			b.WriteString("- " + review.Line(f) + "\n")
		}
	}
	list(fmt.Sprintf("%s not on lines the review can comment on, or over its limit:", Plural(len(s.Kept), "finding")), s.Kept)
	list(fmt.Sprintf("%s left out by the filter `%s`:", Plural(len(s.Dropped), "finding"), s.Filter), s.Dropped)
	return b.String()
}

// Plural is n noun, with an s past one and n in thousands ("1,050 findings").
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Thousands(n) + " " + noun + "s"
}

// filesNote says when the run's paths trigger matched without the full
// list of changed files: the forge cut the list (some list at most 3,000
// files of a pull request), or it could not be read.
func filesNote(e *workflows.Event) string {
	if e == nil || e.Files == nil {
		return ""
	}
	switch {
	case e.Files.Truncated:
		return "> [!NOTE]\n> The forge listed only part of the changed files, so `paths` could not be checked against all of them: the workflow ran."
	case e.Files.Unknown != "":
		return "> [!NOTE]\n> The changed files could not be read (" + oneLine(e.Files.Unknown) + "), so `paths` was not checked: the workflow ran."
	}
	return ""
}

// delivery is the comment's section on the agent's commits (sandbox.push):
// the branch pushed and its compare view, the draft pull/merge request, or
// why nothing was pushed.
func delivery(d *workflows.Delivery, links forge.Links) string {
	const title = "**Agent's commits**"
	note := ""
	if d.Note != "" {
		note = "\n\n" + inlineCode(cutRunes(oneLine(d.Note), 500))
	}
	switch d.Outcome {
	case workflows.DeliveryPushed:
		commits := "1 commit"
		if d.Commits != 1 {
			commits = strconv.Itoa(d.Commits) + " commits"
		}
		branch := inlineCode(d.Branch)
		if d.BranchURL != "" {
			branch = "[" + branch + "](" + d.BranchURL + ")"
		}
		line := fmt.Sprintf("%s · %s pushed to %s", title, commits, branch)
		if d.CompareURL != "" {
			line += " · [compare](" + d.CompareURL + ")"
		}
		if pr := d.PullRequest; pr != nil {
			line += fmt.Sprintf("\n\nDraft %s: [%s](%s)", links.RequestName(), links.RequestText(pr.Number), pr.URL)
		}
		return line + note
	case workflows.DeliveryNoCommits:
		return title + " · the agent made no commits: nothing pushed" + note
	case workflows.DeliveryFailed:
		return title + " · " + icon(workflows.StatusFailed) + " not delivered" + note
	default:
		return title + " · nothing pushed" + note
	}
}

// inlineCode is s as inline code, its backticks turned into quotes.
func inlineCode(s string) string { return "`" + strings.ReplaceAll(s, "`", "'") + "`" }

// fit joins head and body, cutting body (then, if even that is not enough,
// head) so that the result has at most limit characters including the
// truncation note.
func fit(head, body string, limit int) string {
	total := utf8.RuneCountInString(head) + utf8.RuneCountInString(body)
	if total <= limit {
		return head + body
	}
	note := func(omitted int) string {
		return fmt.Sprintf("\n\n---\n*Truncated by hookrun: %s characters omitted to fit the %s-character limit of this forge.*\n",
			Thousands(omitted), Thousands(limit))
	}
	// The note's length depends on the number it prints; reserve for the
	// widest possible number.
	reserve := utf8.RuneCountInString(note(total)) + len("\n```")
	room := limit - utf8.RuneCountInString(head) - reserve
	if room >= 0 {
		kept := cutRunes(body, room)
		if i := strings.LastIndexByte(kept, '\n'); i > 0 && utf8.RuneCountInString(kept[i:]) < 200 {
			kept = kept[:i] // end on a whole line when that loses little
		}
		if f := openFence(kept); f != "" {
			kept += "\n" + f
		}
		return head + kept + note(total-utf8.RuneCountInString(kept))
	}
	kept := cutRunes(head+body, limit-reserve)
	return kept + note(total-utf8.RuneCountInString(kept))
}

// Description is the one-line commit status description, at most limit
// characters.
func Description(r *contract.RunReport, limit int) string {
	var d string
	switch r.Status {
	case workflows.StatusSucceeded:
		d = "Succeeded"
	case workflows.StatusPartiallySucceeded:
		d = "Partially succeeded"
		if s := firstFailed(r.Steps); s != "" {
			d += ": step " + s + " failed, tolerated by continue_on"
		}
	case workflows.StatusSkipped:
		d = "Skipped"
		if r.Error != "" {
			d += ": " + oneLine(r.Error)
		}
	case workflows.StatusFailed:
		d = "Failed"
		if s := firstFailed(r.Steps); s != "" {
			d += " at step " + s
		}
		if r.Error != "" {
			d += ": " + oneLine(r.Error)
		}
	case workflows.StatusCancelled:
		d = "Cancelled"
	default:
		d = "Running"
	}
	d += " (run " + r.RunID + ")"
	return cutRunes(d, limit)
}

func firstFailed(steps []workflows.StepState) string {
	for _, s := range steps {
		if s.Status == workflows.StatusFailed {
			return s.ID
		}
	}
	return ""
}

func stepLine(s workflows.StepState, now time.Time) string {
	box := "[ ]"
	if s.Status.Terminal() {
		box = "[x]"
	}
	line := fmt.Sprintf("- %s %s `%s` %s", box, icon(s.Status), s.ID, s.Status)
	if s.ExitCode != nil && *s.ExitCode != 0 {
		line += fmt.Sprintf(" (exit %d)", *s.ExitCode)
	}
	if s.StartedAt != nil {
		end := now
		if s.FinishedAt != nil {
			end = *s.FinishedAt
		}
		line += " · " + duration(end.Sub(*s.StartedAt))
	}
	if s.Attempts > 1 {
		line += fmt.Sprintf(" · %d attempts", s.Attempts)
	}
	if s.Error != "" {
		line += " · `" + strings.ReplaceAll(cutRunes(oneLine(s.Error), 300), "`", "'") + "`"
	}
	return line
}

// label is a status as the comment's header words it.
func label(s workflows.Status) string { return s.Present().Label }

func icon(s workflows.Status) string { return s.Present().Emoji }

func duration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cutRunes returns the first n runes of s.
func cutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// openFence returns the fence of the code block s ends inside, or "".
func openFence(s string) string {
	open := ""
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimLeft(l, " ")
		for _, f := range []string{"```", "~~~"} {
			if !strings.HasPrefix(l, f) {
				continue
			}
			run := len(l) - len(strings.TrimLeft(l, f[:1]))
			switch {
			case open == "":
				open = strings.Repeat(f[:1], run)
			case open[0] == f[0] && run >= len(open) && strings.TrimSpace(l[run:]) == "":
				open = ""
			}
		}
	}
	return open
}

// Thousands is n with a comma between each three digits ("1,050").
func Thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
