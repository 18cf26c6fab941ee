package results

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hookrun/hookrun/runner/contract"
)

// The parts of SARIF 2.1.0 hookrun reads.
type sarifLog struct {
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool struct {
		Driver struct {
			Name  string      `json:"name"`
			Rules []sarifRule `json:"rules"`
		} `json:"driver"`
	} `json:"tool"`
	OriginalURIBaseIDs map[string]sarifArtifactLocation `json:"originalUriBaseIds"`
	Results            []sarifResult                    `json:"results"`
}

type sarifRule struct {
	ID                   string `json:"id"`
	DefaultConfiguration *struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
	ShortDescription *sarifMessage `json:"shortDescription"`
}

type sarifMessage struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown"`
}

type sarifResult struct {
	RuleID    string `json:"ruleId"`
	RuleIndex *int   `json:"ruleIndex"`
	Rule      *struct {
		ID    string `json:"id"`
		Index *int   `json:"index"`
	} `json:"rule"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
	Fixes     []sarifFix      `json:"fixes"`
}

type sarifLocation struct {
	PhysicalLocation *struct {
		ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
		Region           *sarifRegion          `json:"region"`
	} `json:"physicalLocation"`
}

type sarifArtifactLocation struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
	EndLine     int `json:"endLine"`
	EndColumn   int `json:"endColumn"`
}

type sarifFix struct {
	ArtifactChanges []struct {
		ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
		Replacements     []struct {
			DeletedRegion   sarifRegion `json:"deletedRegion"`
			InsertedContent *struct {
				Text string `json:"text"`
			} `json:"insertedContent"`
		} `json:"replacements"`
	} `json:"artifactChanges"`
}

// decodeSARIF decodes a SARIF log.
func decodeSARIF(file string, data []byte, roots Roots) (*decoded, error) {
	log, err := decodeJSON[sarifLog](file, data)
	if err != nil {
		return nil, err
	}
	if log.Version != "" && log.Version != "2.1.0" {
		return nil, &PositionError{File: file, Msg: fmt.Sprintf("SARIF version %q: only 2.1.0 is read", log.Version)}
	}
	d := &decoded{}
	for _, run := range log.Runs {
		for _, res := range run.Results {
			f, ok := run.finding(res, roots)
			if !ok {
				d.outside++
				continue
			}
			f.File = file
			d.findings = append(d.findings, f)
		}
	}
	return d, nil
}

// rule finds the rule a result names (by index, else by id).
func (run *sarifRun) rule(res sarifResult) *sarifRule {
	rules := run.Tool.Driver.Rules
	idx := res.RuleIndex
	if idx == nil && res.Rule != nil {
		idx = res.Rule.Index
	}
	if idx != nil && *idx >= 0 && *idx < len(rules) {
		return &rules[*idx]
	}
	id := res.RuleID
	if id == "" && res.Rule != nil {
		id = res.Rule.ID
	}
	for i := range rules {
		if id != "" && rules[i].ID == id {
			return &rules[i]
		}
	}
	return nil
}

// path resolves an artifact location and makes it relative to the root.
func (run *sarifRun) path(loc sarifArtifactLocation, roots Roots) (string, bool) {
	uri := unescape(loc.URI)
	if loc.URIBaseID != "" {
		if base, ok := run.OriginalURIBaseIDs[loc.URIBaseID]; ok {
			uri = resolve(uri, base.URI)
		}
	}
	return roots.rel(uri)
}

func (run *sarifRun) finding(res sarifResult, roots Roots) (contract.Finding, bool) {
	f := contract.Finding{Rule: res.RuleID, Tool: run.Tool.Driver.Name, Message: res.Message.Text}
	rule := run.rule(res)
	if f.Rule == "" && rule != nil {
		f.Rule = rule.ID
	}
	if f.Message == "" {
		f.Message = res.Message.Markdown
	}
	if f.Message == "" && rule != nil && rule.ShortDescription != nil {
		f.Message = rule.ShortDescription.Text
	}
	level := res.Level
	if level == "" && rule != nil && rule.DefaultConfiguration != nil {
		level = rule.DefaultConfiguration.Level
	}
	f.Level = sarifLevel(level)
	if len(res.Locations) > 0 && res.Locations[0].PhysicalLocation != nil {
		pl := res.Locations[0].PhysicalLocation
		p, ok := run.path(pl.ArtifactLocation, roots)
		if !ok {
			return f, false
		}
		f.Path = p
		if r := pl.Region; r != nil {
			f.StartLine, f.StartColumn, f.EndLine, f.EndColumn = r.StartLine, r.StartColumn, r.EndLine, r.EndColumn
			if f.EndLine == 0 {
				f.EndLine = f.StartLine
			}
		}
	}
	for _, fix := range res.Fixes {
		for _, ch := range fix.ArtifactChanges {
			p, ok := run.path(ch.ArtifactLocation, roots)
			if !ok {
				continue // a fix outside the checkout is no suggestion
			}
			if p == f.Path {
				p = ""
			}
			for _, rep := range ch.Replacements {
				s := contract.Suggestion{Path: p, StartLine: rep.DeletedRegion.StartLine, StartColumn: rep.DeletedRegion.StartColumn,
					EndLine: rep.DeletedRegion.EndLine, EndColumn: rep.DeletedRegion.EndColumn}
				if s.EndLine == 0 {
					s.EndLine = s.StartLine
				}
				if rep.InsertedContent != nil {
					s.Text = rep.InsertedContent.Text
				}
				f.Suggestions = append(f.Suggestions, s)
			}
		}
	}
	return f, true
}

// sarifLevel maps a SARIF level; warning is SARIF's default.
func sarifLevel(l string) string {
	switch l {
	case "error":
		return contract.LevelError
	case "note", "none":
		return contract.LevelNote
	}
	return contract.LevelWarning
}

// decodeJSON decodes data, a results file, as a T: an empty file is
// errEmpty, either error placed at the file's first line.
func decodeJSON[T any](file string, data []byte) (*T, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, positioned(file, data, 1, errEmpty)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, positioned(file, data, 1, err)
	}
	return &v, nil
}
