package queue

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/hookrun/hookrun/internal/reflecttest"
)

// decodeRunRequest (the encoding/json v2 engine) decodes every message
// exactly as encoding/json v1 did: every field set, the payload byte for
// byte, invalid UTF-8 and names in another case accepted as v1 accepted
// them.
func TestDecodeRunRequestMatchesV1(t *testing.T) {
	big, err := os.ReadFile("../examples/events/pull_request.opened.json")
	if err != nil {
		t.Fatal(err)
	}
	var full RunRequest
	n := 0
	reflecttest.Fill(t, reflect.ValueOf(&full).Elem(), &n)
	full.V, full.Workflow, full.Object = WireVersion, "every-field", ""
	fullData, err := encodeRunRequest(&full)
	if err != nil {
		t.Fatal(err)
	}
	realReq := testRequest("real")
	realReq.ID, realReq.V, realReq.Event.Raw = NewRunID(), WireVersion, big
	realData, err := encodeRunRequest(realReq)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/run_request.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []reflecttest.Case{
		{Name: "every field", Data: fullData},
		{Name: "real payload", Data: realData},
		{Name: "golden, indented", Data: golden},
		{Name: "invalid UTF-8 in the payload and a title", Data: []byte("{\"v\":1,\"id\":\"x\",\"workflow\":\"w\",\"event\":{\"pull_request\":{\"title\":\"a\xffb\"},\"raw\":{\"t\":\"c\xfe\"}}}")},
		{Name: "names in another case", Data: []byte(`{"V":1,"ID":"x","Workflow":"w","Event":{"Forge":"github","Raw":[1, 2]}}`)},
		{Name: "a duplicate name", Data: []byte(`{"v":1,"id":"x","id":"y","workflow":"w"}`)},
		{Name: "null fields", Data: []byte(`{"v":1,"id":"x","workflow":"w","event":{"pull_request":null,"labels":null,"raw":null},"params":null}`)},
	}
	malformed := []string{`{"v":1,"id":"x","workflow":"w"`, `{"v":"1"}`, `[]`, `{"v":1,"id":"x","workflow":"w","event":{"raw":{"a":}}}`}
	reflecttest.DecodesAsV1(t, decodeRunRequest, cases, malformed, func(t *testing.T, c reflecttest.Case, got *RunRequest) {
		if c.Name == "every field" && !reflect.DeepEqual(*got, full) {
			t.Fatalf("round trip lost something:\n%+v\nwant\n%+v", *got, full)
		}
		var want RunRequest
		if err := json.Unmarshal(c.Data, &want); err != nil || !bytes.Equal(got.Event.Raw, want.Event.Raw) {
			t.Fatalf("raw %q, v1's %q (%v)", got.Event.Raw, want.Event.Raw, err)
		}
	})
}

// BenchmarkDecodeRunRequest decodes the run request of the bench's 28 KB
// pull_request payload with the consumer's decoder (v2) and, in the same
// run, with encoding/json v1 (what it was): compare the two as a ratio.
func BenchmarkDecodeRunRequest(b *testing.B) {
	big, err := os.ReadFile("../examples/events/pull_request.opened.json")
	if err != nil {
		b.Fatal(err)
	}
	req := testRequest("dec")
	req.ID, req.V, req.Event.Raw = NewRunID(), WireVersion, big
	data, err := encodeRunRequest(req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("v2", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeRunRequest(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("v1", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var r RunRequest
			if err := json.Unmarshal(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
