package queue

import (
	"bytes"
	"encoding/json"
	"slices"
)

// The splice of encodeRunRequest relies on the JSON layout of RunRequest:
// its event object is directly followed by the field spliceNextField
// (always present), and the event's Raw field is spliceRawField, omitted
// when empty, so that the spliced key is the event's only one of that
// name. TestSpliceLayout guards both.
const (
	spliceNextField = "attempt"
	spliceRawField  = "raw"

	spliceEventEnd = `},"` + spliceNextField + `":`
	spliceRawKey   = `,"` + spliceRawField + `":`
)

// encodeRunRequest is json.Marshal(req) without the cost of re-validating
// and compacting Event.Raw: encoding/json runs every json.RawMessage through
// its validator and compactor, which for a 25 KB webhook body was the
// largest single cost of a publish. Raw is spliced in as it is; it must be
// valid JSON, which it is when ingress parsed it (an invalid Raw falls back
// to json.Marshal, which reports it).
func encodeRunRequest(req *RunRequest) ([]byte, error) {
	return appendRunRequest(nil, req)
}

// appendRunRequest is encodeRunRequest appending to dst.
func appendRunRequest(dst []byte, req *RunRequest) ([]byte, error) {
	raw := req.Event.Raw
	if len(raw) == 0 || (raw[0] != '{' && raw[0] != '[') {
		return json.Marshal(req)
	}
	r := *req
	r.Event.Raw = nil
	data, err := json.Marshal(&r)
	if err != nil {
		return nil, err
	}
	// A string inside the event cannot produce the bytes spliceEventEnd
	// (its quotes are escaped), so their last occurrence closes the event.
	end := bytes.LastIndex(data, []byte(spliceEventEnd))
	if end < 0 {
		return json.Marshal(req)
	}
	out := slices.Grow(dst, len(data)+len(spliceRawKey)+len(raw))
	out = append(out, data[:end]...)
	out = append(out, spliceRawKey...)
	out = append(out, raw...)
	out = append(out, data[end:]...)
	return out, nil
}
