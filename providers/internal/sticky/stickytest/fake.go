package stickytest

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Request is one request a forge fake received.
type Request struct {
	Method, Path string
	// Auth is the credential header the forge reads (Authorization on
	// GitHub, PRIVATE-TOKEN on GitLab).
	Auth string
	Body string
	At   time.Time
}

// Requests records what reached a forge fake. The zero value is ready and
// safe for concurrent use.
type Requests struct {
	mu   sync.Mutex
	list []Request
}

// Add records r.
func (q *Requests) Add(r Request) {
	q.mu.Lock()
	q.list = append(q.list, r)
	q.mu.Unlock()
}

// All returns the requests so far, in order.
func (q *Requests) All() []Request {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.list)
}

// Count returns how many requests had method and a path matching the
// regexp pathRE as a whole.
func (q *Requests) Count(method, pathRE string) int {
	re := regexp.MustCompile("^" + pathRE + "$")
	n := 0
	for _, r := range q.All() {
		if r.Method == method && re.MatchString(r.Path) {
			n++
		}
	}
	return n
}

// Limits says which requests a forge fake answers as rate-limited. The zero
// value limits nothing and is safe for concurrent use.
type Limits struct {
	mu sync.Mutex
	n  map[string]int // "METHOD /path" → answer rate-limited this many more times
}

// Set makes the next n requests to methodPath ("PATCH /repos/...") limited.
func (l *Limits) Set(methodPath string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[methodPath] = n
}

// Take reports whether this request to methodPath is to be answered as
// rate-limited, counting it.
func (l *Limits) Take(methodPath string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[methodPath] <= 0 {
		return false
	}
	l.n[methodPath]--
	return true
}

// StrictJSON decodes exactly one JSON value from b into v, refusing unknown
// fields, so a fake notices any field a reporter was not meant to send.
func StrictJSON(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}
