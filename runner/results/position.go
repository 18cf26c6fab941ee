package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// PositionError is a malformed results file, placed as file:line:col.
type PositionError struct {
	File      string // relative to the results folder
	Line, Col int    // 1-based; 0 when unknown
	Msg       string
}

func (e *PositionError) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Col == 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// lineCol is the 1-based line and column of byte offset off in data.
func lineCol(data []byte, off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// positioned turns a decoding error of data (a whole file, or the record
// starting at line firstLine of one) into a *PositionError.
func positioned(file string, data []byte, firstLine int, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var fe *fieldError
	var off int64 = -1
	msg := strings.TrimPrefix(err.Error(), "json: ")
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
		if off > 0 {
			off-- // the offending byte, not the one after it
		}
	case errors.As(err, &typ):
		off = valueStart(data, typ.Offset)
		field := fieldPath(typ.Field)
		msg = fmt.Sprintf("%s: want %s, got %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.As(err, &fe):
		off = keyOffset(data, fe.key)
		msg = fe.msg
	case errors.Is(err, errEmpty):
		return &PositionError{File: file, Line: firstLine, Col: 1, Msg: err.Error()}
	}
	if off < 0 {
		if k, ok := unknownKey(err); ok {
			if o := keyOffset(data, k); o >= 0 {
				off = o
			}
		}
	}
	if off < 0 {
		return &PositionError{File: file, Line: firstLine, Msg: msg}
	}
	line, col := lineCol(data, off)
	return &PositionError{File: file, Line: firstLine - 1 + line, Col: col, Msg: msg}
}

var errEmpty = errors.New("empty file")

// jsonKind names a Go kind as JSON calls it.
func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"), strings.HasPrefix(k, "float"):
		return "number"
	case k == "slice", k == "array":
		return "array"
	case k == "struct", k == "map":
		return "object"
	case k == "bool":
		return "boolean"
	}
	return k
}

// unknownKey extracts the key of encoding/json's "unknown field" error.
func unknownKey(err error) (string, bool) {
	rest, ok := strings.CutPrefix(err.Error(), `json: unknown field "`)
	if !ok {
		return "", false
	}
	k, _, ok := strings.Cut(rest, `"`)
	return k, ok
}

// keyOffset finds the offset of the first object key named key in data
// (walking its tokens); -1 when there is none.
func keyOffset(data []byte, key string) int64 {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct{ object, wantKey bool }
	var stack []frame
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return -1
		}
		top := len(stack) - 1
		isKey := top >= 0 && stack[top].object && stack[top].wantKey
		if top >= 0 && stack[top].object {
			stack[top].wantKey = !stack[top].wantKey
		}
		switch t := tok.(type) {
		case json.Delim:
			// A member's value toggled its object back to wanting a key
			// above; a nested object or array is pushed and popped.
			switch t {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if isKey && t == key {
				// skip whitespace and separators before the key's quote
				i := before
				for i < int64(len(data)) && data[i] != '"' {
					i++
				}
				return i
			}
		}
	}
}

// fieldError is an invalid value of the object key key, from a decoder
// of this package (the key's position is searched for).
type fieldError struct{ key, msg string }

func (e *fieldError) Error() string { return e.msg }

// fieldPath is encoding/json's Field without the names of embedded Go
// structs (which start with a capital letter; JSON keys here do not).
func fieldPath(f string) string {
	var keep []string
	for _, p := range strings.Split(f, ".") {
		if p != "" && (p[0] < 'A' || p[0] > 'Z') {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return "value"
	}
	return strings.Join(keep, ".")
}

// valueStart is where the JSON value that ends at offset end begins;
// end - 1 when no value of data ends there.
func valueStart(data []byte, end int64) int64 {
	dec := json.NewDecoder(bytes.NewReader(data))
	var opens []int64
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return end - 1
		}
		start := before
		for start < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[start]) >= 0 {
			start++
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				opens = append(opens, start)
				continue
			}
			start = opens[len(opens)-1]
			opens = opens[:len(opens)-1]
		}
		if dec.InputOffset() == end {
			return start
		}
		if dec.InputOffset() > end {
			return end - 1
		}
	}
}
