package workflows

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a workflow file, at a position in it.
type Problem struct {
	File string // path as given to Parse, ParseFile or Load
	Line int    // 1-based; 0 when the problem concerns the whole file
	Col  int    // 1-based; 0 when unknown
	Msg  string // lowercase, no trailing period
}

// Error renders the problem as "file:line:col: message" (the format of
// `hookrun validate` and of editors' problem matchers). A problem without a
// position renders as "file: message".
func (p Problem) Error() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Msg)
}

// Problems is every problem found, sorted by file, line and column. It is the
// error type of Parse, ParseFile and Load.
type Problems []Problem

// Error renders one problem per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// sort orders problems by file, line, column, then message, so output is
// stable whatever order the checks ran in.
func (ps Problems) sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return a.Msg < b.Msg
	})
}

// orNil returns nil for an empty list so that callers can test err != nil.
func (ps Problems) orNil() error {
	if len(ps) == 0 {
		return nil
	}
	ps.sort()
	return ps
}
