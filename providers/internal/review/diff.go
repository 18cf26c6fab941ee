package review

import (
	"strconv"
	"strings"
)

// FileDiff is what a pull request's diff shows of one file, by its line
// numbers on the new side (the head).
type FileDiff struct {
	Added   map[int]bool   // lines the change added
	Context map[int]bool   // unchanged lines the diff shows around them
	Text    map[int]string // the new side's text of each line shown
	Old     map[int]int    // a context line's number on the old side (a position may want both)
}

// Diff is a pull request's diff by new path.
type Diff map[string]*FileDiff

// InDiff reports whether line of path is shown by the diff (added or
// context).
func (d Diff) InDiff(path string, line int) bool {
	f := d[path]
	return f != nil && (f.Added[line] || f.Context[line])
}

// ParsePatch reads the hunks of one file's unified diff (the `patch` or
// `diff` a forge's API gives of a pull request's file): lines
// after "@@ -a,b +c,d @@" headers; everything before the first header is
// skipped. A file the API gave no patch for (binary, too large) is an
// empty FileDiff: in the change, with no lines.
func ParsePatch(patch string) *FileDiff {
	fd := &FileDiff{Added: map[int]bool{}, Context: map[int]bool{}, Text: map[int]string{}, Old: map[int]int{}}
	line, old := 0, 0
	in := false
	for _, l := range strings.Split(patch, "\n") {
		if strings.HasPrefix(l, "@@") {
			old, line, in = hunkOldStart(l), hunkStart(l), true
			continue
		}
		if !in || line == 0 {
			continue
		}
		switch {
		case strings.HasPrefix(l, "+"):
			fd.Added[line], fd.Text[line] = true, strings.TrimSuffix(l[1:], "\r")
			line++
		case strings.HasPrefix(l, " "):
			fd.Context[line], fd.Text[line], fd.Old[line] = true, strings.TrimSuffix(l[1:], "\r"), old
			line++
			old++
		case l == "":
			// a blank context line some tools send without its space: it
			// is left out (so is the patch's final newline)
		case strings.HasPrefix(l, "-"):
			old++ // removed on the old side
		case strings.HasPrefix(l, `\`):
			// "\ No newline at end of file"
		default:
			in = false // out of the hunk
		}
	}
	return fd
}

// hunkStart is c of "@@ -a,b +c,d @@"; 0 when the header is malformed.
func hunkStart(h string) int { return hunkNumber(h, " +") }

// hunkOldStart is a of "@@ -a,b +c,d @@"; 0 when malformed.
func hunkOldStart(h string) int { return hunkNumber(h, " -") }

// hunkNumber is the number after sep in a hunk header; 0 when malformed.
func hunkNumber(h, sep string) int {
	_, rest, ok := strings.Cut(h, sep)
	if !ok {
		return 0
	}
	end := strings.IndexAny(rest, ", ")
	if end < 0 {
		end = len(rest)
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// ParseUnified reads a whole `git diff` (as a forge serves a pull request's
// diff): each
// "diff --git" section's file, by its "+++ b/path" name (a deleted file,
// "+++ /dev/null", is left out).
func ParseUnified(diff string) Diff {
	out := Diff{}
	sections := strings.Split("\n"+diff, "\ndiff --git ")
	for _, s := range sections[1:] {
		path, named := "", false
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "@@") {
				break
			}
			if p, ok := strings.CutPrefix(l, "+++ "); ok {
				named = true
				p = strings.TrimSuffix(p, "\t")
				if p == "/dev/null" {
					path = ""
				} else {
					path = strings.TrimPrefix(p, "b/")
				}
			}
		}
		if !named {
			// no +++ line: a rename or mode change only, "a/x b/y"
			if _, b, ok := strings.Cut(strings.SplitN(s, "\n", 2)[0], " b/"); ok {
				path = b
			}
		}
		if path != "" {
			out[path] = ParsePatch(s)
		}
	}
	return out
}
