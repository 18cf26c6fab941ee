package recent

import (
	"strconv"
	"testing"
)

// TestMapBounded: however many keys are put and never taken, the map
// holds at most Max of them, and the newest is always among them.
func TestMapBounded(t *testing.T) {
	m := Map[string, int]{Max: 100}
	for i := range 1000 {
		m.Put(strconv.Itoa(i), i)
		if v, ok := m.Get(strconv.Itoa(i)); !ok || v != i {
			t.Fatalf("Get(%d) = %d, %v right after Put", i, v, ok)
		}
	}
	if n := m.Len(); n != 100 {
		t.Errorf("Len = %d, want 100", n)
	}
	m.Put("999", -1) // replacing makes no room
	if n := m.Len(); n != 100 {
		t.Errorf("Len after replacing = %d, want 100", n)
	}
	if v, ok := m.Take("999"); !ok || v != -1 {
		t.Errorf("Take = %d, %v; want -1, true", v, ok)
	}
	if _, ok := m.Get("999"); ok {
		t.Error("a taken key is still there")
	}
	var d Map[int, int]
	for i := range DefaultMax + 10 {
		d.Put(i, i)
	}
	if n := d.Len(); n != DefaultMax {
		t.Errorf("zero Map: Len = %d, want DefaultMax %d", n, DefaultMax)
	}
}
