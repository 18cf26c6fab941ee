package workflows

import "strings"

// commandLines returns the lines of a comment that may hold a command: every
// line, trimmed, except those inside a fenced code block (``` or ~~~), in an
// indented code block (four spaces or a tab) or in a block quote (">"), as
// Markdown renders them: a command quoted from someone else, or shown as an
// example, is not a command. Blank lines are dropped.
func commandLines(body string) []string {
	var (
		out   []string
		fence string // the open fence's marker, "" outside a fenced block
	)
	for line := range strings.Lines(body) {
		line = strings.TrimRight(line, "\r\n")
		indent := len(line) - len(strings.TrimLeft(line, " "))
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if indent < 4 && strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if indent < 4 {
			if m := fenceMarker(trimmed); m != "" {
				fence = m
				continue
			}
		}
		switch {
		case trimmed == "":
		case indent >= 4 || strings.HasPrefix(line, "\t"):
			// an indented code block
		case strings.HasPrefix(trimmed, ">"):
			// a quote
		default:
			out = append(out, trimmed)
		}
	}
	return out
}

// fenceMarker is the run of backticks or tildes (three or more) that opens a
// fenced code block at the start of a trimmed line, "" if none.
func fenceMarker(trimmed string) string {
	for _, c := range []string{"`", "~"} {
		n := len(trimmed) - len(strings.TrimLeft(trimmed, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// matchCommand checks whether a trimmed command line is command or starts
// with command followed by blank space, and returns the rest of the line,
// trimmed.
func matchCommand(command, line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, command)
	if !ok {
		return "", false
	}
	if rest == "" {
		return "", true
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return "", false // "/deployx" is not "/deploy"
	}
	return strings.TrimSpace(rest), true
}
