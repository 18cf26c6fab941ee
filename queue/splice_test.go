package queue

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// encodeRunRequest splices Raw in as received; the message must decode to
// exactly what json.Marshal's encoding decodes to.
func TestEncodeRunRequestMatchesMarshal(t *testing.T) {
	big, err := os.ReadFile("../examples/events/pull_request.opened.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		raw   string
		title string
	}{
		{"no raw", "", "plain"},
		{"compact object", `{"action":"opened"}`, "plain"},
		{"indented object", "{\n  \"action\": \"opened\",\n  \"n\": [1, 2]\n}", "plain"},
		{"array", `[1,{"a":"b"}]`, "plain"},
		{"title that looks like the event key", `{"x":1}`, `"event":{"forge":"github"}`},
		{"real payload", string(big), "<b>&amp;</b>"},
		{"not json", "not json", "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := testRequest("enc")
			req.ID, req.V = NewRunID(), WireVersion
			req.Event.PullRequest.Title = tt.title
			req.Event.Raw = nil
			if tt.raw != "" {
				req.Event.Raw = json.RawMessage(tt.raw)
			}
			want, wantErr := json.Marshal(req)
			got, gotErr := encodeRunRequest(req)
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("error %v, json.Marshal's %v", gotErr, wantErr)
			}
			if wantErr != nil {
				return
			}
			var a, b RunRequest
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatalf("decoding %s: %v", got, err)
			}
			if err := json.Unmarshal(want, &b); err != nil {
				t.Fatal(err)
			}
			// Raw keeps its own whitespace; compare it as values.
			var ra, rb any
			if len(a.Event.Raw) > 0 || len(b.Event.Raw) > 0 {
				if err := json.Unmarshal(a.Event.Raw, &ra); err != nil {
					t.Fatalf("decoding spliced raw: %v", err)
				}
				_ = json.Unmarshal(b.Event.Raw, &rb)
			}
			a.Event.Raw, b.Event.Raw = nil, nil
			if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(ra, rb) {
				t.Fatalf("decoded request differs:\n got %s\nwant %s", got, want)
			}
			if _, err := decodeRunRequest(got); err != nil {
				t.Fatalf("decodeRunRequest: %v", err)
			}
		})
	}
}

// jsonFields are the JSON names and options of t's fields, in field order.
func jsonFields(t reflect.Type) (names []string, opts map[string]string, types map[string]reflect.Type) {
	opts, types = map[string]string{}, map[string]reflect.Type{}
	for f := range t.Fields() {
		name, opt, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
		opts[name], types[name] = opt, f.Type
	}
	return names, opts, types
}

// TestSpliceLayout guards what appendRunRequest relies on: RunRequest's
// event object is followed by spliceNextField, always written; the event
// is a plain struct whose spliceRawField is a json.RawMessage omitted when
// empty. Should a field move, the splice would silently fall back to
// json.Marshal (correct, but the cost it exists to avoid is back): so the
// fast path must also be seen to be taken, Raw kept byte for byte.
func TestSpliceLayout(t *testing.T) {
	names, opts, types := jsonFields(reflect.TypeFor[RunRequest]())
	i := slices.Index(names, "event")
	if i < 0 || i+1 >= len(names) || names[i+1] != spliceNextField {
		t.Fatalf("RunRequest's JSON fields are %v: the splice needs %q directly after \"event\"", names, spliceNextField)
	}
	if opts[spliceNextField] != "" {
		t.Fatalf("RunRequest's %q field has options %q: the splice needs it always written", spliceNextField, opts[spliceNextField])
	}
	ev := types["event"]
	marshaler := reflect.TypeFor[json.Marshaler]()
	if ev.Kind() != reflect.Struct || ev.Implements(marshaler) || reflect.PointerTo(ev).Implements(marshaler) {
		t.Fatalf("RunRequest's event is %s: the splice needs a struct encoded field by field", ev)
	}
	_, evOpts, evTypes := jsonFields(ev)
	if evTypes[spliceRawField] != reflect.TypeFor[json.RawMessage]() || evOpts[spliceRawField] != "omitempty" {
		t.Fatalf("%s's %q field is %v with options %q: the splice needs a json.RawMessage with omitempty",
			ev, spliceRawField, evTypes[spliceRawField], evOpts[spliceRawField])
	}

	req := testRequest("splice")
	raw := []byte("{\n  \"action\": \"opened\",\n  \"n\": [1, 2]\n}")
	req.Event.Raw = raw
	got, err := encodeRunRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, append([]byte(spliceRawKey), raw...)) {
		t.Fatalf("Raw was not spliced in as it is (the json.Marshal fallback ran):\n%s", got)
	}
}

func BenchmarkEncodeRunRequest(b *testing.B) {
	big, err := os.ReadFile("../examples/events/pull_request.opened.json")
	if err != nil {
		b.Fatal(err)
	}
	req := testRequest("enc")
	req.Event.Raw = big
	for b.Loop() {
		if _, err := encodeRunRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}
