package stepinit

import (
	"encoding/binary"
	"errors"
	"time"
)

// The Spec travels to the init in a binary form of its own rather than as
// JSON: encoding/json's start-up and decoding were some 7% of an init's
// CPU, and the init runs once per isolated step (BenchmarkExec). The form
// is a version byte, then every field in the order of the Spec's
// declaration: a string as its length (4 bytes) and bytes, a list as its
// count (4 bytes) and strings, a number as 8 bytes, a bool as 1 byte; all
// little-endian. Nothing may follow.
const specVersion = 1

// MarshalBinary encodes the spec for the init.
func (s Spec) MarshalBinary() ([]byte, error) {
	var w specWriter
	w.b = append(w.b, specVersion)
	w.str(s.Path)
	w.list(s.Argv)
	w.list(s.Env)
	w.str(s.Dir)
	w.num(uint64(s.UID))
	w.num(uint64(s.GID))
	w.list(s.Hide)
	w.list(s.Expose)
	w.num(uint64(s.Grace))
	w.str(s.Hostname)
	w.num(s.ShmSize)
	w.flag(s.SameUser)
	return w.b, w.err
}

// UnmarshalBinary decodes what MarshalBinary encoded; anything else
// (another version, a truncated spec, bytes left over) is an error.
func (s *Spec) UnmarshalBinary(data []byte) error {
	if len(data) == 0 || data[0] != specVersion {
		return errors.New("decoding init spec: unknown version")
	}
	r := specReader{b: data[1:]}
	s.Path, s.Argv, s.Env, s.Dir = r.str(), r.list(), r.list(), r.str()
	uid, gid := r.num(), r.num()
	s.UID, s.GID = uint32(uid), uint32(gid)
	s.Hide, s.Expose, s.Grace = r.list(), r.list(), time.Duration(r.num())
	s.Hostname, s.ShmSize, s.SameUser = r.str(), r.num(), r.flag()
	switch {
	case r.err != nil:
		return r.err
	case len(r.b) != 0:
		return errors.New("decoding init spec: trailing bytes")
	case uid > 1<<32-1 || gid > 1<<32-1:
		return errors.New("decoding init spec: uid or gid out of range")
	}
	return nil
}

type specWriter struct {
	b   []byte
	err error
}

func (w *specWriter) str(s string) {
	if uint64(len(s)) > 1<<32-1 {
		w.err = errors.New("encoding init spec: a string is too long")
		return
	}
	w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(s)))
	w.b = append(w.b, s...)
}

func (w *specWriter) list(l []string) {
	w.b = binary.LittleEndian.AppendUint32(w.b, uint32(len(l)))
	for _, s := range l {
		w.str(s)
	}
}

func (w *specWriter) num(n uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, n) }

func (w *specWriter) flag(f bool) {
	if f {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// specReader reads fields in turn; after the first short read every field
// is its zero value and err says why.
type specReader struct {
	b   []byte
	err error
}

var errShortSpec = errors.New("decoding init spec: truncated")

func (r *specReader) take(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errShortSpec
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *specReader) u32() uint64 {
	if b := r.take(4); b != nil {
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return 0
}

func (r *specReader) num() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *specReader) str() string { return string(r.take(r.u32())) }

func (r *specReader) list() []string {
	n := r.u32()
	if n > uint64(len(r.b))/4 { // each string takes at least its length
		r.err = errShortSpec
		return nil
	}
	var out []string
	for range n {
		out = append(out, r.str())
	}
	return out
}

func (r *specReader) flag() bool {
	b := r.take(1)
	if b != nil && b[0] > 1 {
		r.err = errors.New("decoding init spec: a flag is neither 0 nor 1")
	}
	return b != nil && b[0] == 1
}
