package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/hookrun/hookrun/runner/contract"
)

// The parts of reviewdog's Diagnostic Format (proto/rdf) hookrun reads,
// with protojson's field names.
type rdResult struct {
	Source      *rdSource      `json:"source"`
	Severity    rdSeverity     `json:"severity"`
	Diagnostics []rdDiagnostic `json:"diagnostics"`
}

type rdDiagnostic struct {
	Message  string `json:"message"`
	Location *struct {
		Path  string   `json:"path"`
		Range *rdRange `json:"range"`
	} `json:"location"`
	Severity rdSeverity `json:"severity"`
	Source   *rdSource  `json:"source"`
	Code     *struct {
		Value string `json:"value"`
	} `json:"code"`
	Suggestions []struct {
		Range *rdRange `json:"range"`
		Text  string   `json:"text"`
	} `json:"suggestions"`
}

type rdSource struct {
	Name string `json:"name"`
}

type rdRange struct {
	Start *rdPosition `json:"start"`
	End   *rdPosition `json:"end"`
}

type rdPosition struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// rdSeverity is a Severity as protojson writes it (its name) or as a
// number; "" is unknown.
type rdSeverity string

func (s *rdSeverity) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		switch name {
		case "", "UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO":
			*s = rdSeverity(name)
			return nil
		}
		return &fieldError{"severity", fmt.Sprintf("severity %q: want ERROR, WARNING, INFO or UNKNOWN_SEVERITY", name)}
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 || n > 3 {
		return &fieldError{"severity", fmt.Sprintf("severity %s: want ERROR, WARNING, INFO or UNKNOWN_SEVERITY", b)}
	}
	*s = [...]rdSeverity{"", "ERROR", "WARNING", "INFO"}[n]
	return nil
}

func (s rdSeverity) level() string {
	switch s {
	case "ERROR":
		return contract.LevelError
	case "INFO":
		return contract.LevelNote
	}
	return contract.LevelWarning
}

// decodeRDJSON decodes one DiagnosticResult.
func decodeRDJSON(file string, data []byte, roots Roots) (*decoded, error) {
	r, err := decodeJSON[rdResult](file, data)
	if err != nil {
		return nil, err
	}
	d := &decoded{}
	for _, diag := range r.Diagnostics {
		f, ok := diag.finding(r.Source, r.Severity, roots)
		d.add(file, f, ok)
	}
	return d, nil
}

// decodeRDJSONL decodes one Diagnostic per line; blank lines are skipped.
func decodeRDJSONL(file string, data []byte, roots Roots) (*decoded, error) {
	d := &decoded{}
	line := 0
	for rest := data; len(rest) > 0; {
		line++
		rec, next, _ := bytes.Cut(rest, []byte{'\n'})
		rest = next
		if len(bytes.TrimSpace(rec)) == 0 {
			continue
		}
		var diag rdDiagnostic
		if err := json.Unmarshal(rec, &diag); err != nil {
			return nil, positioned(file, rec, line, err)
		}
		f, ok := diag.finding(nil, "", roots)
		d.add(file, f, ok)
	}
	return d, nil
}

func (diag *rdDiagnostic) finding(src *rdSource, sev rdSeverity, roots Roots) (contract.Finding, bool) {
	f := contract.Finding{Message: diag.Message}
	if diag.Severity != "" && diag.Severity != "UNKNOWN_SEVERITY" {
		sev = diag.Severity
	}
	f.Level = sev.level()
	if diag.Source != nil && diag.Source.Name != "" {
		src = diag.Source
	}
	if src != nil {
		f.Tool = src.Name
	}
	if diag.Code != nil {
		f.Rule = diag.Code.Value
	}
	if loc := diag.Location; loc != nil {
		p, ok := roots.rel(loc.Path)
		if !ok {
			return f, false
		}
		f.Path = p
		f.StartLine, f.StartColumn, f.EndLine, f.EndColumn = loc.Range.bounds()
	}
	for _, s := range diag.Suggestions {
		sg := contract.Suggestion{Text: s.Text}
		sg.StartLine, sg.StartColumn, sg.EndLine, sg.EndColumn = s.Range.bounds()
		f.Suggestions = append(f.Suggestions, sg)
	}
	return f, true
}

// bounds is the range's start and end; a missing end is the start line.
func (r *rdRange) bounds() (sl, sc, el, ec int) {
	if r == nil || r.Start == nil {
		return 0, 0, 0, 0
	}
	sl, sc = r.Start.Line, r.Start.Column
	el = sl
	if r.End != nil {
		el, ec = r.End.Line, r.End.Column
	}
	return sl, sc, el, ec
}
