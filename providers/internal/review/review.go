package review

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
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
	Finding contract.Finding
	// Key is the finding's key in its workflow (Key): the workflow's
	// Scope and the finding's fingerprint.
	Key       string
	StartLine int // first line of a range; == Line for one line
	Line      int // last line (the new side's line number)
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
	// Keys are every current finding's (Comment.Key).
	Keys map[string]bool
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

// Build places findings of the workflow whose Scope is scope on the diff
// as opts says. previous are the keys earlier runs of the workflow
// commented on: those findings are not commented again.
func Build(findings []contract.Finding, d Diff, opts workflows.ReviewOptions, scope string, previous map[string]bool) Plan {
	p := Plan{Keys: map[string]bool{}}
	max := opts.MaxComments
	if max <= 0 {
		max = 30
	}
	posted := 0
	for _, f := range findings {
		c, onDiff := place(f, d)
		c.Key = Key(scope, c.Key)
		p.Keys[c.Key] = true
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
		case previous[c.Key]:
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
// not shown either (or it names no file or line). c.Key is the finding's
// fingerprint.
func place(f contract.Finding, d Diff) (Comment, bool) {
	c := Comment{Finding: f}
	fd := d[f.Path]
	start, end := f.StartLine, max(f.EndLine, f.StartLine)
	c.Key = f.Fingerprint(linesText(fd, start, end))
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

// Scope is what a finding comment's marker says of the workflow that
// posted it: a digest of the workflow's name (unique in a repository), so
// that two workflows reviewing one pull request each see only their own
// comments, and no text of the name reaches the marker.
func Scope(workflow string) string {
	sum := sha256.Sum256([]byte("hookrun-workflow\x00" + workflow))
	return hex.EncodeToString(sum[:8])
}

// Key is the key of the finding with fingerprint fp in the workflow whose
// Scope is scope: what a comment's Marker carries.
func Key(scope, fp string) string { return scope + ":" + fp }

// Marker is the hidden line that says which finding of which workflow a
// comment is about (key: Key).
func Marker(key string) string { return "<!-- hookrun:finding:" + key + " -->" }

var markerRE = regexp.MustCompile(`^<!-- hookrun:finding:([0-9a-f]{16}:[0-9a-f]{32}) -->`)

// KeyOf is the key (Key) a comment's body starts with, "" when it starts
// with no marker: not a finding comment of hookrun's, or one from before
// markers named the workflow (<!-- hookrun:finding:<fingerprint> -->),
// which no run counts, skips or marks gone.
func KeyOf(body string) string {
	if m := markerRE.FindStringSubmatch(body); m != nil {
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
// message shown as text, and the suggestion in the forge's syntax (a
// fenced diff when a line of it could be taken for a quick action:
// slashLine).
func Body(c Comment, syn Syntax) string {
	f := c.Finding
	var b strings.Builder
	b.WriteString(Marker(c.Key) + "\n")
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
		if syn != FencedDiff && slashLine(c.Suggestion) {
			syn = FencedDiff
		}
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

// slashLine reports whether a line of s starts with '/' and a letter: a
// forge's quick action (/approve, /merge) should a reader of the note miss
// the fence around it (an older extractor knew only ``` fences), so
// Body shows such a suggestion as a fenced diff, whose lines start with
// '-' and '+'.
func slashLine(s string) bool {
	for _, l := range strings.Split(s, "\n") {
		if len(l) > 1 && l[0] == '/' && (l[1]|0x20 >= 'a' && l[1]|0x20 <= 'z') {
			return true
		}
	}
	return false
}

// Escape shows s as text in a comment's Markdown on every forge: what it
// renders is s, and nothing in it acts.
//   - '&' is backslash-escaped and '<', '>' become entities: no HTML, so no
//     closing of a hidden marker, no <autolink>, no entity;
//   - a zero-width joiner follows '@' and '#': no mention of a user or
//     team, no reference to an issue or pull request (forges find those
//     in the rendered text, where a backslash is gone);
//   - the other ASCII punctuation that starts inline Markdown is
//     backslash-escaped (CommonMark's escapes render as the character
//     itself): '\\' '`' '*' '_' '[' ']' '(' ')' '!' '~' '|' '$' '%' '^' '{'
//     '}', so no code span or fence, emphasis, link, image, reference link
//     or footnote, table, math, and no reference of a forge that marks
//     them with '!', '~', '%', '$', '^' or '&' (an escaped one is left
//     alone);
//   - a line's first character after blanks is escaped when it is '/'
//     (a forge with quick actions runs a note's line "/approve", "/merge";
//     "\/approve" is none), '-', '+' or '=' (a list, a rule, a heading's
//     underline), and the '.' after a line's leading digits (a numbered
//     list);
//   - a line's leading spaces and tabs become no-break spaces (a tab four):
//     indentation would make a code block, which shows the escapes;
//   - '\r' is dropped ('\n' stays: a message may have lines).
//
// A bare URL may still be shown as a link to itself, as the forge links
// any URL in text: its target is the text shown.
func Escape(s string) string {
	var b strings.Builder
	// start: only blanks so far on this line; number: blanks, then digits.
	start, number := true, false
	for _, r := range s {
		if r == '\r' {
			continue // dropped, and the line goes on as a forge that drops it reads it
		}
		switch {
		case r == '\n':
			b.WriteRune(r)
		case start && r == ' ':
			// Indentation would make a code block, where the escapes
			// show: no-break spaces indent without it.
			b.WriteRune('\u00a0')
		case start && r == '\t':
			b.WriteString("\u00a0\u00a0\u00a0\u00a0")
		case r == '&':
			b.WriteString(`\&`)
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '@' || r == '#':
			b.WriteRune(r)
			b.WriteRune('\u200d') // a zero-width joiner: no mention, no reference
		case strings.ContainsRune(inlineActive, r), start && strings.ContainsRune(lineActive, r), number && r == '.':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		digit := r >= '0' && r <= '9'
		switch {
		case r == '\n':
			start, number = true, false
		case start && Blank(r):
		case digit && (start || number):
			start, number = false, true
		default:
			start, number = false, false
		}
	}
	return b.String()
}

// inlineActive is the ASCII punctuation Escape backslash-escapes
// anywhere; lineActive what it escapes as a line's first non-blank
// character.
const (
	inlineActive = "\\`*_[]()!~|$%^{}"
	lineActive   = "/-+="
)

// Blank reports whether r leaves a line "starting" for Escape: a space, a
// tab or any other Unicode space, or an invisible format character.
func Blank(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) }

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

// Tally compares the current findings with previous, the keys earlier
// runs of the workflow commented on (and are not marked fixed): still are
// those found again, gone those no longer found.
func Tally(p Plan, previous map[string]bool) (still, gone []string) {
	for fp := range previous {
		if p.Keys[fp] {
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
// that counts it, the request's Diff, what to post (Plan), the keys of
// the workflow's earlier findings no longer found (Gone), and the earlier
// finding comments by key (Earlier, of every workflow; T is what the
// forge needs to mark one gone).
type Prepared[T any] struct {
	Sum     *Summary
	Diff    Diff
	Plan    Plan
	Gone    []string
	Earlier map[string]T
}

// Prepare is where every forge's review starts: the workflow's review
// options and the run's findings, the request's diff and the finding
// comments of earlier runs by key (the forge's diff and earlier: every
// comment of hookrun's account whose body has a KeyOf), and the plan
// (Decide, which keeps the workflow's own). On an error Sum is set (it
// counts the findings).
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
	p.Plan, p.Gone = Decide(p.Sum, findings, p.Diff, opts, rep.Workflow.Name, p.Earlier)
	return p, nil
}

// Decide plans the review of workflow's findings on d (Build), given
// earlier, the finding comments of earlier runs by key, of which it
// considers only the workflow's (Scope): another workflow's comments are
// not skipped, counted or marked gone. It counts the plan in sum (Tally):
// new, still present and gone, kept and dropped. gone are the keys no
// longer found.
func Decide[T any](sum *Summary, findings []contract.Finding, d Diff, opts workflows.ReviewOptions, workflow string,
	earlier map[string]T) (plan Plan, gone []string) {
	scope := Scope(workflow)
	previous := map[string]bool{}
	for key := range earlier {
		if strings.HasPrefix(key, scope+":") {
			previous[key] = true
		}
	}
	plan = Build(findings, d, opts, scope, previous)
	still, gone := Tally(plan, previous)
	sum.New, sum.Still, sum.Gone = len(plan.Comments), len(still), len(gone)
	sum.Kept, sum.Dropped = plan.Kept, plan.Dropped
	return plan, gone
}
