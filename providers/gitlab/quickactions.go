package gitlab

import (
	"strings"
	"unicode/utf8"

	"github.com/hookrun/hookrun/providers/internal/review"
)

// inertMarkdown returns the Markdown md, rendered as before, with no line GitLab
// would run as a quick action (/approve, /merge, /label ~x) in a note or
// a description the bot posts: such a line's first character after blanks
// is '/', and inertMarkdown backslash-escapes that '/' ("\/approve" renders as
// "/approve" and is no quick action; a line already escaped so, as review.Escape
// writes it, is left alone). GitLab runs only a line that starts with '/'
// in a paragraph at the top level; inertMarkdown escapes more (any blanks first),
// except:
//   - a line indented four columns or more (with spaces and tabs): an
//     indented code block, or a paragraph's line GitLab does not run;
//   - the lines of a fenced code block whose opening fence (``` or ~~~)
//     starts the line, up to its closing fence: shown as they are.
//
// Those fenced lines are left alone only while inertMarkdown is sure GitLab reads
// the same fences: after a line that could open an HTML block (one starting
// with '<', but a whole HTML comment such as hookrun's markers), a
// multi-line quote (>>>), an indented fence, a fence closed other than by
// its opening run alone, or when md starts with front matter, the fences
// of a hostile text could be paired differently, and every later line is
// escaped, fence or not. '\r' is dropped, as GitLab drops it before it
// looks for quick actions.
func inertMarkdown(md string) string {
	lines := strings.Split(strings.ReplaceAll(md, "\r", ""), "\n")
	trusted := !frontMatter(md)
	fence := "" // the opening run of the fenced code block the line is in
	for i, l := range lines {
		if fence != "" {
			if closes(l, fence) {
				trusted = trusted && l == fence
				fence = ""
			}
			continue
		}
		if f := opens(l); f != "" && trusted { // a fence at the line's start
			fence = f
			continue
		}
		rest, cols := lead(l)
		if cols >= 4 {
			continue
		}
		if opens(rest) != "" || strings.HasPrefix(rest, ">>>") ||
			strings.HasPrefix(rest, "<") && !(strings.HasPrefix(rest, "<!--") && strings.Contains(rest[2:], "-->")) {
			trusted = false
		}
		if strings.HasPrefix(rest, "/") {
			lines[i] = l[:len(l)-len(rest)] + `\` + rest
		}
	}
	return strings.Join(lines, "\n")
}

// lead is line after its leading blanks (as Escape counts them), and the
// columns its leading spaces and tabs indent it by (a tab to the next
// multiple of four).
func lead(line string) (rest string, cols int) {
	indenting := true
	for i, r := range line {
		switch {
		case indenting && r == ' ':
			cols++
		case indenting && r == '\t':
			cols += 4 - cols%4
		case review.Blank(r):
			indenting = false
		default:
			return line[i:], cols
		}
	}
	return "", cols
}

// opens is the run of three or more backticks or tildes that starts s, when
// s could open a fenced code block (a backtick fence's info string has no
// backtick); "" when not.
func opens(s string) string {
	if s == "" || (s[0] != '`' && s[0] != '~') {
		return ""
	}
	n := len(s) - len(strings.TrimLeft(s, s[:1]))
	if n < 3 || s[0] == '`' && strings.Contains(s[n:], "`") {
		return ""
	}
	return s[:n]
}

// closes reports whether line could close a fenced code block opened with
// fence: at most three columns of indent, a run of fence's character at
// least as long, then only blanks.
func closes(line, fence string) bool {
	rest, cols := lead(line)
	if cols > 3 || !strings.HasPrefix(rest, fence) {
		return false
	}
	rest = strings.TrimLeft(rest, fence[:1])
	for _, r := range rest {
		if !review.Blank(r) {
			return false
		}
	}
	return true
}

// frontMatter reports whether md could start with front matter (---, +++
// or ;;; after blanks), which GitLab shows as code.
func frontMatter(md string) bool {
	for len(md) > 0 {
		r, n := utf8.DecodeRuneInString(md)
		if !review.Blank(r) {
			break
		}
		md = md[n:]
	}
	return strings.HasPrefix(md, "---") || strings.HasPrefix(md, "+++") || strings.HasPrefix(md, ";;;")
}
