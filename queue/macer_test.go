package queue

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

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
