package stepinit

import (
	"reflect"
	"testing"
	"time"
)

func sampleSpec() Spec {
	return Spec{
		Path: "/bin/sh", Argv: []string{"sh", "-c", "echo 'a\x00b' ü"}, Env: []string{"PATH=/bin", "EMPTY="},
		Dir: "/work/ws", UID: 65534, GID: 65533, Hide: []string{"/var/lib/hookrun", "/etc/hookrun.yaml"},
		Expose: []string{"/var/lib/hookrun/ws/r1"}, Grace: 1500 * time.Millisecond,
		Hostname: "hookrun-step", ShmSize: 256 << 20, SameUser: true,
	}
}

// Every field survives the trip to the init, the empty spec too.
func TestSpecBinaryRoundTrip(t *testing.T) {
	for _, want := range []Spec{sampleSpec(), {Argv: []string{""}}} {
		data, err := want.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Spec
		if err := got.UnmarshalBinary(data); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %+v, want %+v", got, want)
		}
	}
}

// A spec cut anywhere, with bytes after it, of another version or with a
// count larger than what follows is refused, never half-read.
func TestSpecBinaryRefusesMalformed(t *testing.T) {
	data, err := sampleSpec().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(data) {
		var s Spec
		if err := s.UnmarshalBinary(data[:n]); err == nil {
			t.Fatalf("a spec cut at %d of %d bytes was accepted: %+v", n, len(data), s)
		}
	}
	var s Spec
	if err := s.UnmarshalBinary(append(append([]byte(nil), data...), 0)); err == nil {
		t.Fatal("a trailing byte was accepted")
	}
	bad := append([]byte(nil), data...)
	bad[0] = specVersion + 1
	if err := s.UnmarshalBinary(bad); err == nil {
		t.Fatal("another version was accepted")
	}
	huge := []byte{specVersion, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}
	if err := s.UnmarshalBinary(huge); err == nil {
		t.Fatal("an argv count beyond the data was accepted")
	}
}

func FuzzSpecBinary(f *testing.F) {
	data, _ := sampleSpec().MarshalBinary()
	f.Add(data)
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Spec
		if s.UnmarshalBinary(b) != nil {
			return
		}
		again, err := s.MarshalBinary()
		if err != nil || string(again) != string(b) {
			t.Fatalf("accepted %x, re-encoded as %x (%v)", b, again, err)
		}
	})
}
