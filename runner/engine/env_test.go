package engine

import (
	"slices"
	"sync"
	"testing"

	"github.com/hookrun/hookrun/workflows"
)

// TestDerivedEnvIsItsOwn: lists derived from one prefix (steps running at
// once) share nothing they write: what one sets, over the prefix's names
// or new ones, neither the prefix nor another derived list sees; secrets
// set over a list's variables leave its lookup without them.
func TestDerivedEnvIsItsOwn(t *testing.T) {
	pre := newEnvList(4)
	pre.setAll([]workflows.EnvVar{{Name: "A", Value: "a"}, {Name: "B", Value: "b"}})
	want := slices.Clone(pre.vars)

	var wg sync.WaitGroup
	got := make([][]workflows.EnvVar, 8)
	for i := range got {
		wg.Go(func() {
			l := pre.derive(2)
			v := string(rune('0' + i))
			l.setAll([]workflows.EnvVar{{Name: "A", Value: v}, {Name: "C", Value: v}})
			l.expandAll([]workflows.EnvVar{{Name: "D", Value: "${A}${B}${C}"}})
			got[i] = l.withSecrets([]workflows.EnvVar{{Name: "B", Value: "secret"}, {Name: "S", Value: "s"}, {Name: "S", Value: "s2"}})
			if x, _ := l.lookup("B"); x != "b" {
				t.Errorf("list %d: lookup B = %q, want the value without the secret", i, x)
			}
			if _, ok := l.lookup("S"); ok {
				t.Errorf("list %d: the secret S is in the lookup", i)
			}
		})
	}
	wg.Wait()
	for i, vars := range got {
		v := string(rune('0' + i))
		w := []workflows.EnvVar{{Name: "A", Value: v}, {Name: "B", Value: "secret"}, {Name: "C", Value: v}, {Name: "D", Value: v + "b" + v}, {Name: "S", Value: "s2"}}
		if !slices.Equal(vars, w) {
			t.Errorf("list %d: %v, want %v", i, vars, w)
		}
	}
	if !slices.Equal(pre.vars, want) || len(pre.index) != 2 {
		t.Errorf("the prefix changed: %v (index %v), want %v", pre.vars, pre.index, want)
	}
	if _, ok := pre.lookup("C"); ok {
		t.Error("a derived list's name is in the prefix")
	}

	// A list derived from a derived one has both indexes.
	l := pre.derive(1)
	l.set("C", "c")
	d := l.derive(0)
	d.set("A", "x")
	if a, _ := d.lookup("A"); a != "x" {
		t.Errorf("A = %q in the second derivation", a)
	}
	if c, _ := d.lookup("C"); c != "c" {
		t.Errorf("C = %q in the second derivation", c)
	}
	if a, _ := l.lookup("A"); a != "a" {
		t.Errorf("A = %q in the first derivation after the second set it", a)
	}
}
