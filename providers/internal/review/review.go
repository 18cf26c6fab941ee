package review

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hookrun/hookrun/runner/contract"
	"github.com/hookrun/hookrun/workflows"
)

// ListedMax is how many findings the run's comment lists of those the
// filter dropped (the rest are counted).
const ListedMax = 20

// maxMessage bounds a finding's message in a comment, in runes.
const maxMessage = 4000

// Comment is one inline comment a review posts: a finding placed on lines
// of the new side the diff shows.
type Comment struct {
	Finding     contract.Finding
	Fingerprint string
	StartLine   int // first line of a range; == Line for one line
	Line        int // last line (the new side's line number)
	// Suggestion is the replacement of lines StartLine..Line, when the
	// finding's first suggestion could be made one (whole lines, all shown
	// by the diff); Suggested says so.
	Suggestion string
	Suggested  bool
	// Original are the new side's lines StartLine..Line as the diff shows
	// them (for FencedDiff).
	Original []string
}

// Plan is what one run's review does with its findings.
type Plan struct {
	// Comments are the findings to comment on, in order, at most
	// max_comments, those already commented on by an earlier run left
	// out (Skip).
	Comments []Comment
	// Kept are the findings the filter keeps that are not commented on
	// inline: off the diff's lines (filter file or none) or over
	// max_comments.
	Kept []contract.Finding
	// Dropped are the findings the filter drops.
	Dropped []contract.Finding
	// Fingerprints are every current finding's.
	Fingerprints map[string]bool
}

// Summary is what the run's comment says of the review.
type Summary struct {
	Filter   string
	Findings int // all the run's findings
	Posted   int // inline comments this run posted
	// New, Still and Gone compare the findings commented on with the
	// earlier runs': not commented on before, commented on before and
	// still found, commented on before and no longer found.
	New, Still, Gone int
	Kept             []contract.Finding // kept by the filter, not inline
	Dropped          []contract.Finding // dropped by the filter
	Error            string             // why the review could not be posted ("" = it was)
}

// Build places findings on the diff as opts says. previous are the
// fingerprints earlier runs commented on: those findings are not
// commented again.
func Build(findings []contract.Finding, d Diff, opts workflows.ReviewOptions, previous map[string]bool) Plan {
	p := Plan{Fingerprints: map[string]bool{}}
	max := opts.MaxComments
	if max <= 0 {
		max = 30
	}
	posted := 0
	for _, f := range findings {
		c, onDiff := place(f, d)
		p.Fingerprints[c.Fingerprint] = true
		keep := false
		switch opts.Filter {
		case workflows.ReviewFilterNone:
			keep = true
		case workflows.ReviewFilterFile:
			keep = d[f.Path] != nil
		case workflows.ReviewFilterDiffContext:
			keep = onDiff
		default: // added
			keep = onDiff && d[f.Path].Added[c.Line]
		}
		switch {
		case !keep:
			p.Dropped = append(p.Dropped, f)
		case !onDiff:
			p.Kept = append(p.Kept, f)
		case previous[c.Fingerprint]:
			// commented on by an earlier run: still there, not repeated
		case posted >= max:
			p.Kept = append(p.Kept, f)
		default:
			p.Comments = append(p.Comments, c)
			posted++
		}
	}
	return p
}

// place anchors f on the diff: its line range, narrowed to its last line
// when the range is not all shown; onDiff is false when its last line is
// not shown either (or it names no file or line).
func place(f contract.Finding, d Diff) (Comment, bool) {
	c := Comment{Finding: f}
	fd := d[f.Path]
	start, end := f.StartLine, max(f.EndLine, f.StartLine)
	c.Fingerprint = f.Fingerprint(linesText(fd, start, end))
	if fd == nil || start <= 0 || !d.InDiff(f.Path, end) {
		return c, false
	}
	if !allShown(d, f.Path, start, end) {
		start = end
	}
	c.StartLine, c.Line = start, end
	if len(f.Suggestions) > 0 {
		s := f.Suggestions[0]
		if text, sl, el, ok := wholeLines(s, fd); ok && (s.Path == "" || s.Path == f.Path) && allShown(d, f.Path, sl, el) {
			c.StartLine, c.Line, c.Suggestion, c.Suggested = sl, el, text, true
		}
	}
	for l := c.StartLine; l <= c.Line; l++ {
		c.Original = append(c.Original, fd.Text[l])
	}
	return c, true
}

func allShown(d Diff, path string, start, end int) bool {
	for l := start; l <= end; l++ {
		if !d.InDiff(path, l) {
			return false
		}
	}
	return true
}

// linesText is the new side's text of lines start..end, "" unless the
// diff shows them all.
func linesText(fd *FileDiff, start, end int) string {
	if fd == nil || start <= 0 {
		return ""
	}
	var b []string
	for l := start; l <= end; l++ {
		t, ok := fd.Text[l]
		if !ok {
			return ""
		}
		b = append(b, t)
	}
	return strings.Join(b, "\n")
}

// wholeLines turns s into the replacement of whole lines sl..el: a
// suggestion without columns replaces its lines; one with columns is
// completed with the rest of its first and last lines from the diff.
func wholeLines(s contract.Suggestion, fd *FileDiff) (text string, sl, el int, ok bool) {
	sl, el = s.StartLine, max(s.EndLine, s.StartLine)
	if sl <= 0 {
		return "", 0, 0, false
	}
	repl := strings.TrimSuffix(s.Text, "\n")
	if s.StartColumn <= 1 && s.EndColumn == 0 {
		return repl, sl, el, true
	}
	if s.EndColumn == 1 && el > sl && s.StartColumn <= 1 {
		// up to the start of el: lines sl..el-1
		return repl, sl, el - 1, true
	}
	first, ok1 := fd.Text[sl]
	last, ok2 := fd.Text[el]
	if !ok1 || !ok2 {
		return "", 0, 0, false
	}
	sc, ec := max(s.StartColumn, 1), s.EndColumn
	if ec == 0 {
		ec = len(last) + 1
	}
	if sc-1 > len(first) || ec-1 > len(last) {
		return "", 0, 0, false
	}
	return first[:sc-1] + s.Text + last[ec-1:], sl, el, true
}

// Marker is the hidden line that says which finding a comment is about.
func Marker(fp string) string { return "<!-- hookrun:finding:" + fp + " -->" }

var markerRE = regexp.MustCompile(`<!-- hookrun:finding:([0-9a-f]{32}) -->`)

// FingerprintOf is the finding fingerprint of a comment's body, "" when
// it has no marker (not a finding comment of hookrun's).
func FingerprintOf(body string) string {
	if m := markerRE.FindStringSubmatch(body); m != nil && strings.HasPrefix(body, m[0]) {
		return m[1]
	}
	return ""
}

// FixedMarker ends a comment edited to say its finding is gone.
const FixedMarker = "<!-- hookrun:fixed -->"

// Fixed is what a gone finding's comment gets appended.
func Fixed(sha string) string {
	return "\n\n" + FixedMarker + "\n✅ Fixed in " + Escape(sha) + "."
}

// Syntax is how a forge shows a suggested change.
type Syntax int

const (
	// Suggestion is ```suggestion replacing the commented lines.
	Suggestion Syntax = iota
	// SuggestionRange is ```suggestion:-0+N, the comment on the first
	// line.
	SuggestionRange
	// FencedDiff is a ```diff block of the lines before and after, for a
	// forge without suggestions.
	FencedDiff
)

// Body is the comment of c: the marker, the level, rule and tool, the
// message shown as text, and the suggestion in the forge's syntax.
func Body(c Comment, syn Syntax) string {
	f := c.Finding
	var b strings.Builder
	b.WriteString(Marker(c.Fingerprint) + "\n")
	level := f.Level
	if level == "" {
		level = contract.LevelWarning
	}
	fmt.Fprintf(&b, "**%s**", Escape(level))
	if f.Rule != "" {
		fmt.Fprintf(&b, " · %s", Code(f.Rule))
	}
	if f.Tool != "" {
		fmt.Fprintf(&b, " · %s", Escape(f.Tool))
	}
	b.WriteString("\n\n" + Escape(cut(f.Message, maxMessage)) + "\n")
	if c.Suggested {
		switch syn {
		case Suggestion:
			fence := Fence(c.Suggestion)
			fmt.Fprintf(&b, "\n%ssuggestion\n%s\n%s\n", fence, c.Suggestion, fence)
		case SuggestionRange:
			fence := Fence(c.Suggestion)
			fmt.Fprintf(&b, "\n%ssuggestion:-0+%d\n%s\n%s\n", fence, c.Line-c.StartLine, c.Suggestion, fence)
		case FencedDiff:
			var d strings.Builder
			for _, l := range c.Original {
				d.WriteString("-" + l + "\n")
			}
			for _, l := range strings.Split(c.Suggestion, "\n") {
				d.WriteString("+" + l + "\n")
			}
			fence := Fence(d.String())
			fmt.Fprintf(&b, "\nSuggested change:\n\n%sdiff\n%s%s\n", fence, d.String(), fence)
		}
	}
	return b.String()
}

// Escape shows s as text in Markdown: no HTML (so no closing a hidden
// marker either), no @mentions, no code spans or fences.
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '@':
			b.WriteString("@\u200d") // a zero-width joiner: no mention
		case '`':
			b.WriteString("\\`")
		case '\r':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Code is s as an inline code span (no backticks inside).
func Code(s string) string {
	return "`" + strings.NewReplacer("`", "'", "\n", " ", "\r", "").Replace(cut(s, 200)) + "`"
}

// Line is one finding as the run's comment lists it: path:line, rule and
// message on one line.
func Line(f contract.Finding) string {
	loc := f.Path
	if loc == "" {
		loc = "(no file)"
	}
	if f.StartLine > 0 {
		loc = fmt.Sprintf("%s:%d", loc, f.StartLine)
	}
	s := Code(loc)
	if f.Rule != "" {
		s += " " + Code(f.Rule)
	}
	msg := strings.Join(strings.Fields(f.Message), " ")
	return s + " " + Escape(cut(msg, 200))
}

// Fence is a backtick fence for s: three backticks, or one more than the
// longest run of backticks in s.
func Fence(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// Tally compares the current findings with previous, the fingerprints
// earlier runs commented on (and are not marked fixed): still are those
// found again, gone those no longer found.
func Tally(p Plan, previous map[string]bool) (still, gone []string) {
	for fp := range previous {
		if p.Fingerprints[fp] {
			still = append(still, fp)
		} else {
			gone = append(gone, fp)
		}
	}
	sort.Strings(still)
	sort.Strings(gone)
	return still, gone
}

// RunMarker is the hidden line of a review's own body: which run posted
// it.
func RunMarker(runID string) string { return "<!-- hookrun-review:" + runID + " -->" }

// MarksGone reports whether a run's missing findings may be marked fixed:
// only after a run that succeeded (or partially succeeded). A failed or
// cancelled run's missing findings may be a crashed tool's.
func MarksGone(s workflows.Status) bool {
	return s == workflows.StatusSucceeded || s == workflows.StatusPartiallySucceeded
}

// Prepared is what a forge's review works from (Prepare): the Summary
// that counts it, the request's Diff, what to post (Plan), the
// fingerprints of earlier findings no longer found (Gone), and the
// earlier comments by fingerprint (Earlier; T is what the forge needs to
// mark one gone).
type Prepared[T any] struct {
	Sum     *Summary
	Diff    Diff
	Plan    Plan
	Gone    []string
	Earlier map[string]T
}

// Prepare is where every forge's review starts: the workflow's review
// options and the run's findings, the request's diff and the comments of
// earlier runs (the forge's diff and earlier), and the plan (Decide). On
// an error Sum is set (it counts the findings).
func Prepare[T any](ctx context.Context, rep *contract.RunReport, diff func(context.Context) (Diff, error),
	earlier func(context.Context) (map[string]T, error)) (Prepared[T], error) {
	opts := *rep.Workflow.Report.Review
	var findings []contract.Finding
	if rep.Results != nil {
		findings = rep.Results.Findings
	}
	p := Prepared[T]{Sum: &Summary{Filter: opts.Filter, Findings: len(findings)}}
	var err error
	if p.Diff, err = diff(ctx); err != nil {
		return p, err
	}
	if p.Earlier, err = earlier(ctx); err != nil {
		return p, err
	}
	p.Plan, p.Gone = Decide(p.Sum, findings, p.Diff, opts, p.Earlier)
	return p, nil
}

// Decide plans the review of findings on d (Build), given earlier, the
// comments of earlier runs by fingerprint, and counts the plan in sum
// (Tally): new, still present and gone, kept and dropped. gone are the
// fingerprints no longer found.
func Decide[T any](sum *Summary, findings []contract.Finding, d Diff, opts workflows.ReviewOptions, earlier map[string]T) (plan Plan, gone []string) {
	previous := map[string]bool{}
	for fp := range earlier {
		previous[fp] = true
	}
	plan = Build(findings, d, opts, previous)
	still, gone := Tally(plan, previous)
	sum.New, sum.Still, sum.Gone = len(plan.Comments), len(still), len(gone)
	sum.Kept, sum.Dropped = plan.Kept, plan.Dropped
	return plan, gone
}
