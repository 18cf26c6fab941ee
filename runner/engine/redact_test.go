package engine

import (
	"bytes"
	"strings"
	"testing"
)

func TestLineWriterRedacts(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-abcdef"
	long := strings.Repeat("x", maxLineBuffer+10)
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"whole line", []string{"token " + secret + "\n"}, "token ***\n"},
		{"split across writes", []string{"token hunt", "er2-ab", "cdef end\n"}, "token *** end\n"},
		{"split at newline boundary", []string{"a " + secret[:5], secret[5:] + "\nb " + secret + "\n"}, "a ***\nb ***\n"},
		{"no trailing newline is flushed on close", []string{"tail " + secret}, "tail ***"},
		{"several secrets on a line", []string{secret + " and " + secret + "\n"}, "*** and ***\n"},
		{"long line without newline cut outside the secret", []string{long[:maxLineBuffer-3], secret, "!\n"}, long[:maxLineBuffer-3] + "***!\n"},
		{"empty secret masks nothing", []string{"plain\n"}, "plain\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			w := newLineWriter(&out, NewRedactor(secret, ""))
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got %q, want %q", trunc(out.String()), trunc(tt.want))
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:40] + "..." + s[len(s)-40:]
	}
	return s
}

func TestRedactorMultiLineAndOverlap(t *testing.T) {
	t.Parallel()
	r := NewRedactor("abc", "abcdef", "-----BEGIN KEY-----\nMIIEvQIBADANBg\n-----END KEY-----")
	tests := []struct{ in, want string }{
		{"x abcdef y abc z", "x *** y *** z"},
		{"key line: MIIEvQIBADANBg", "key line: ***"},
		{"-----BEGIN KEY-----\nMIIEvQIBADANBg\n-----END KEY-----", "***"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := string(r.Bytes([]byte(tt.in))); got != tt.want {
			t.Errorf("Bytes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var nilR *Redactor
	if nilR.String("abc") != "abc" {
		t.Error("a nil redactor changed text")
	}
}
