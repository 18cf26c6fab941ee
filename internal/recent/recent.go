package recent

import "sync"

// Map is a map safe for concurrent use that holds at most Max entries
// (DefaultMax when 0): past it, an arbitrary entry makes room, and the
// work whose entry went pays the read it saved. The zero value is ready.
type Map[K comparable, V any] struct {
	Max int

	mu sync.Mutex
	m  map[K]V
}

// DefaultMax is Map.Max when it is 0: about the runs one process has
// queued or running at once.
const DefaultMax = 2048

// Put sets k to v.
func (r *Map[K, V]) Put(k K, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[K]V)
	}
	if _, ok := r.m[k]; !ok && len(r.m) >= r.max() {
		for old := range r.m {
			delete(r.m, old)
			break
		}
	}
	r.m[k] = v
}

// Get returns k's value.
func (r *Map[K, V]) Get(k K) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[k]
	return v, ok
}

// Take returns k's value and removes it.
func (r *Map[K, V]) Take(k K) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[k]
	delete(r.m, k)
	return v, ok
}

// Delete removes k.
func (r *Map[K, V]) Delete(k K) {
	r.mu.Lock()
	delete(r.m, k)
	r.mu.Unlock()
}

// Len is the number of entries.
func (r *Map[K, V]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

func (r *Map[K, V]) max() int {
	if r.Max > 0 {
		return r.Max
	}
	return DefaultMax
}
