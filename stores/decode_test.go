package stores

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/hookrun/hookrun/internal/reflecttest"
	"github.com/hookrun/hookrun/queue"
)

// decodeRecord and the run index (queue.DecodeJSON, the encoding/json v2
// engine) decode every stored record as encoding/json v1 did: every
// field, the golden record, and what v1 was lenient about.
func TestDecodeRecordMatchesV1(t *testing.T) {
	var full RunRecord
	n := 0
	reflecttest.Fill(t, reflect.ValueOf(&full).Elem(), &n)
	full.Event.Raw = nil // never stored
	fullData, err := encodeRecord(&full)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/run_record.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []reflecttest.Case{
		{Name: "every field", Data: fullData},
		{Name: "golden", Data: golden},
		{Name: "invalid UTF-8", Data: []byte("{\"id\":\"x\",\"error\":\"a\xffb\",\"event\":{\"pull_request\":{\"number\":3,\"title\":\"c\xfe\"}}}")},
		{Name: "names in another case", Data: []byte(`{"ID":"x","Workflow":"w","Status":"running","Event":{"Pull_Request":{"Number":4}}}`)},
		{Name: "a duplicate name", Data: []byte(`{"id":"x","status":"queued","status":"running"}`)},
		{Name: "nulls", Data: []byte(`{"id":"x","steps":null,"event":{"pull_request":null},"finished_at":null,"params":null}`)},
	}
	malformed := []string{`{"id":"x"`, `{"attempt":"1"}`, `[]`, `{"steps":{}}`}
	reflecttest.DecodesAsV1(t, decodeRecord, cases, malformed, func(t *testing.T, c reflecttest.Case, got *RunRecord) {
		if c.Name == "every field" && !reflect.DeepEqual(*got, full) {
			t.Fatalf("round trip lost something:\n%+v\nwant\n%+v", *got, full)
		}
		var wantF, gotF indexFields
		if err := json.Unmarshal(c.Data, &wantF); err != nil {
			t.Fatal(err)
		}
		if err := queue.DecodeJSON(c.Data, &gotF); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotF, wantF) {
			t.Fatalf("index fields\n%+v\nv1\n%+v", gotF, wantF)
		}
	})
}

// BenchmarkDecodeRecord decodes a finished run's record (the golden one)
// as the runner's reads do (v2, now), and, in the same run, with
// encoding/json v1 (before); the run index's decode of the same record
// likewise. Compare as ratios.
func BenchmarkDecodeRecord(b *testing.B) {
	data, err := os.ReadFile("testdata/run_record.golden.json")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("record-v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeRecord(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("record-v1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r RunRecord
			if err := json.Unmarshal(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("index-v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var f indexFields
			if err := queue.DecodeJSON(data, &f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("index-v1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var f indexFields
			if err := json.Unmarshal(data, &f); err != nil {
				b.Fatal(err)
			}
		}
	})
}
