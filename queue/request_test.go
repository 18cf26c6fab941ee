package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

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

// The encoding matches the spec's example layout: the time part of a known
// millisecond, and all-zero and all-one ids at the ends of the alphabet.
func TestULIDEncoding(t *testing.T) {
	if got := encodeULID([16]byte{}); got != "00000000000000000000000000" {
		t.Fatalf("zero id %s", got)
	}
	var ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	if got := encodeULID(ones); got != "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" {
		t.Fatalf("max id %s", got)
	}
	// 1469918176385 ms is 01ARYZ6S41 in the spec's README.
	var raw [16]byte
	ms := uint64(1469918176385)
	raw[0], raw[1], raw[2], raw[3], raw[4], raw[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	if got := encodeULID(raw)[:10]; got != "01ARYZ6S41" {
		t.Fatalf("time part %s, want 01ARYZ6S41", got)
	}
}

// The time part is the creation time's millisecond.
func TestULIDTime(t *testing.T) {
	before := time.Now().UnixMilli()
	id := NewRunID()
	var ms uint64
	for _, c := range id[:10] {
		ms = ms<<5 | uint64(strings.IndexByte(crockford, byte(c)))
	}
	if int64(ms) < before || int64(ms) > time.Now().UnixMilli() {
		t.Fatalf("id %s carries %d ms, created at about %d", id, ms, before)
	}
}

// Ids sort in creation order, also many within one millisecond, and are
// unique and valid run ids.
func TestULIDMonotonic(t *testing.T) {
	var ids []string
	for range 10000 {
		ids = append(ids, NewRunID())
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids are not in creation order")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if len(id) != 26 || seen[id] || CheckRunID(id) != nil {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}

func TestRunIDTime(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 2, 3, 456e6, time.UTC)
	// Encoded directly: newULID keeps its ids ordered, so an earlier time
	// than its last id's would not show.
	var b [16]byte
	ms := uint64(at.UnixMilli())
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	copy(b[6:], "0123456789")
	id := encodeULID(b)
	if now, ok := RunIDTime(NewRunID()); !ok || time.Since(now) > time.Minute {
		t.Errorf("RunIDTime(NewRunID()) = %v %v", now, ok)
	}
	for _, s := range []string{id, strings.ToLower(id)} {
		got, ok := RunIDTime(s)
		if !ok || !got.Equal(at) {
			t.Errorf("RunIDTime(%q) = %v %v, want %v", s, got, ok, at)
		}
	}
	for _, bad := range []string{"", "r1", "contracttest-0123456789abc", strings.Repeat("U", 26)} {
		if _, ok := RunIDTime(bad); ok {
			t.Errorf("RunIDTime(%q) ok", bad)
		}
	}
}

// The authenticator covers every byte of the body and the subject, and
// only the key it was made with verifies it.
func TestRequestMAC(t *testing.T) {
	t.Parallel()
	m := newMacer(testRequestKey)
	body := []byte(`{"v":1,"id":"01J","workflow":"deploy","event":{"sender":"owner"}}`)
	const subj = runsSubjectPrefix + "deploy"
	h := m.header(subj, body)
	if len(h) != 64 || h != m.header(subj, body) {
		t.Fatalf("header %q: want 64 hex digits, the same each time", h)
	}
	if err := m.verify(subj, body, h); err != nil {
		t.Fatalf("verifying its own authenticator: %v", err)
	}
	for i := range body {
		tampered := bytes.Clone(body)
		tampered[i] ^= 0x01
		if err := m.verify(subj, tampered, h); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("body with byte %d changed: %v, want ErrUnauthenticated", i, err)
		}
	}
	other := newMacer([]byte(strings.Repeat("k", MinRequestKey)))
	for name, c := range map[string]struct {
		subj, mac string
	}{
		"other subject": {runsSubjectPrefix + "review", h},
		"other key":     {subj, other.header(subj, body)},
		"missing":       {subj, ""},
		"malformed":     {subj, "zz" + h[2:]},
		"truncated":     {subj, h[:63]},
	} {
		if err := m.verify(c.subj, body, c.mac); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: %v, want ErrUnauthenticated", name, err)
		}
	}
	var none *macer
	if err := none.verify(subj, body, h); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("without a key: %v, want ErrUnauthenticated", err)
	}
}

// BenchmarkRequestMAC measures signing and checking the authenticator of
// a run request carrying a typical 28 KB webhook body.
func BenchmarkRequestMAC(b *testing.B) {
	m := newMacer(testRequestKey)
	body := bytes.Repeat([]byte("x"), 28<<10)
	const subj = runsSubjectPrefix + "review"
	h := m.header(subj, body)
	b.Run("sign", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			_ = m.header(subj, body)
		}
	})
	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := m.verify(subj, body, h); err != nil {
				b.Fatal(err)
			}
		}
	})
}
