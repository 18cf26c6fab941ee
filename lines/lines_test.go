package lines

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// record returns a sink that keeps every call.
func record(calls *[]string) SinkFunc {
	return func(p []byte) error {
		*calls = append(*calls, string(p))
		return nil
	}
}

// cutSink is a recording sink that cuts over-long lines with cut.
type cutSink struct {
	SinkFunc
	cut func(buf []byte, at int) int
}

func (s cutSink) CutLine(buf []byte, at int) int { return s.cut(buf, at) }

func TestWriter(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 10)
	tests := []struct {
		name   string
		opts   Options
		cut    func(buf []byte, at int) int // nil: the sink is no Cutter
		writes []string
		want   []string // emit calls, Close included
	}{
		{"one line", Options{}, nil, []string{"a\n"}, []string{"a\n"}},
		{"lines one per call", Options{}, nil, []string{"a\nb\n"}, []string{"a\n", "b\n"}},
		{"batch passes whole lines at once", Options{Batch: true}, nil, []string{"a\nb\n"}, []string{"a\nb\n"}},
		{"partial line waits for its newline", Options{}, nil, []string{"com", "piling\nlink", "ing\r\n"}, []string{"compiling\n", "linking\r\n"}},
		{"batch holds the partial rest", Options{Batch: true}, nil, []string{"a\nb\nc", "\n"}, []string{"a\nb\n", "c\n"}},
		{"close passes the last partial line", Options{}, nil, []string{"a\npartial"}, []string{"a\n", "partial"}},
		{"nothing written, nothing emitted", Options{}, nil, nil, nil},
		{"over-long partial line in pieces of Max", Options{Max: 4}, nil, []string{long}, []string{"xxxx", "xxxx", "xx"}},
		{"a line with its newline is never cut", Options{Max: 4}, nil, []string{long + "\n"}, []string{long + "\n"}},
		{"piece at exactly Max", Options{Max: 4}, nil, []string{"abcd", "e\n"}, []string{"abcd", "e\n"}},
		{"cut moved back", Options{Max: 4}, func(_ []byte, at int) int { return at - 1 }, []string{"abcdef"}, []string{"abc", "def"}},
		{"cut after Max is ignored", Options{Max: 4}, func(_ []byte, at int) int { return at + 3 }, []string{"abcdef"}, []string{"abcd", "ef"}},
		{"cut at 0 holds the line back", Options{Max: 4}, func([]byte, int) int { return 0 }, []string{"abcdef", "gh\n"}, []string{"abcdefgh\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls []string
			var sink Sink = record(&calls)
			if tt.cut != nil {
				sink = cutSink{record(&calls), tt.cut}
			}
			w := NewWriter(sink, tt.opts)
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if strings.Join(calls, "|") != strings.Join(tt.want, "|") {
				t.Errorf("emitted %q, want %q", calls, tt.want)
			}
		})
	}
}

func TestWriterReusesNoCallerBuffer(t *testing.T) {
	t.Parallel()
	var calls []string
	w := NewWriter(record(&calls), Options{})
	p := []byte("abc")
	_, _ = w.Write(p)
	copy(p, "XYZ") // the caller may reuse p once Write returns
	_, _ = w.Write([]byte("\n"))
	if len(calls) != 1 || calls[0] != "abc\n" {
		t.Errorf("emitted %q, want [\"abc\\n\"]", calls)
	}
}

func TestWriterErrorsAndClose(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	calls := 0
	w := NewWriter(SinkFunc(func([]byte) error { calls++; return boom }), Options{})
	if n, err := w.Write([]byte("a\n")); !errors.Is(err, boom) || n != 2 {
		t.Fatalf("first Write = %d, %v; want 2, boom", n, err)
	}
	if _, err := w.Write([]byte("b\n")); !errors.Is(err, boom) {
		t.Fatalf("Write after a failure = %v, want boom", err)
	}
	if err := w.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close after a failure = %v, want boom", err)
	}
	if calls != 1 {
		t.Errorf("emit called %d times after failing, want once", calls)
	}

	closer := &countCloser{}
	w = NewWriter(SinkFunc(func([]byte) error { return nil }), Options{Closer: closer})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("late\n")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Write after Close = %v, want io.ErrClosedPipe", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if closer.n != 1 {
		t.Errorf("Options.Closer closed %d times, want once", closer.n)
	}
}

type countCloser struct{ n int }

func (c *countCloser) Close() error { c.n++; return nil }

func TestTrim(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"a\n": "a", "a\r\n": "a", "a": "a", "a\r": "a", "\n": "", "a\n\n": "a\n"} {
		if got := string(Trim([]byte(in))); got != want {
			t.Errorf("Trim(%q) = %q, want %q", in, got, want)
		}
	}
}
