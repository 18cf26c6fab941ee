package queue

import (
	"encoding/json"
	"os"
	"reflect"
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
