package bounded

import (
	"fmt"
	"sync"
	"testing"
)

func TestTheMapForgetsTheOldestPastItsCap(t *testing.T) {
	tests := []struct {
		name    string
		ops     func(m *Map[string, int])
		present []string
		absent  []string
	}{
		{"the oldest of four goes with a cap of three",
			func(m *Map[string, int]) {
				for i, k := range []string{"a", "b", "c", "d"} {
					m.Put(k, i)
				}
			}, []string{"b", "c", "d"}, []string{"a"}},
		{"putting a key again keeps its place",
			func(m *Map[string, int]) {
				m.Put("a", 1)
				m.Put("b", 2)
				m.Put("a", 3)
				m.Put("c", 4)
				m.Put("d", 5)
			}, []string{"b", "c", "d"}, []string{"a"}},
		{"a deleted key frees its room",
			func(m *Map[string, int]) {
				m.Put("a", 1)
				m.Put("b", 2)
				m.Delete("a")
				m.Put("c", 3)
				m.Put("d", 4)
			}, []string{"b", "c", "d"}, []string{"a"}},
		{"a key deleted and put again is not forgotten by its old slot",
			func(m *Map[string, int]) {
				m.Put("a", 1)
				m.Delete("a")
				m.Put("b", 2)
				m.Put("c", 3)
				m.Put("a", 4)
			}, []string{"a", "b", "c"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMap[string, int](3)
			tt.ops(m)
			for _, k := range tt.present {
				if _, ok := m.Get(k); !ok {
					t.Errorf("%q was forgotten", k)
				}
			}
			for _, k := range tt.absent {
				if _, ok := m.Get(k); ok {
					t.Errorf("%q is still there", k)
				}
			}
			if m.Len() > 3 {
				t.Errorf("len %d past the cap", m.Len())
			}
		})
	}
}

func TestPutsAndDeletesKeepTheOrderBounded(t *testing.T) {
	m := NewMap[int, int](10)
	for i := range 10_000 {
		m.Put(i, i)
		m.Delete(i)
	}
	if len(m.order) > 20 {
		t.Fatalf("%d order slots for an empty map of cap 10", len(m.order))
	}
}

func TestPutSaysWhichKeyItForgotAndValuesAreOldestFirst(t *testing.T) {
	m := NewMap[string, int](3)
	m.Put("a", 1)
	m.Put("b", 2)
	m.Delete("a")
	for i, k := range []string{"c", "d"} {
		if ks := m.Put(k, 3+i); ks != nil {
			t.Fatalf("Put forgot %q with room left", ks)
		}
	}
	if ks := m.Put("b", 9); ks != nil {
		t.Fatalf("putting a key again forgot %q", ks)
	}
	if ks := m.Put("e", 5); fmt.Sprint(ks) != "[b]" {
		t.Fatalf("Put forgot %q; want the oldest, b", ks)
	}
	if got := fmt.Sprint(m.Values()); got != "[3 4 5]" {
		t.Fatalf("Values = %s, want c, d, e's", got)
	}
}

func TestAWeighedMapForgetsTheOldestPastItsBudget(t *testing.T) {
	weigh := func(v string) int { return len(v) }
	tests := []struct {
		name   string
		ops    func(m *Map[string, string]) []string // the keys Put forgot
		forgot string
		kept   string // the values, oldest first
		weight int
	}{
		{"light entries stay within the count",
			func(m *Map[string, string]) []string { return append(m.Put("a", "1"), m.Put("b", "22")...) },
			"[]", "[1 22]", 3},
		{"a heavy entry forgets as many of the oldest as its weight needs",
			func(m *Map[string, string]) []string {
				m.Put("a", "111")
				m.Put("b", "222")
				m.Put("c", "33")
				return m.Put("d", "4444444")
			}, "[a b]", "[33 4444444]", 9},
		{"one entry over the budget alone is kept",
			func(m *Map[string, string]) []string { m.Put("a", "1"); return m.Put("b", "twelve chars") },
			"[a]", "[twelve chars]", 12},
		{"a key put again heavier is weighed again",
			func(m *Map[string, string]) []string {
				m.Put("a", "1")
				m.Put("b", "2")
				return m.Put("b", "22222222222")
			}, "[a]", "[22222222222]", 11},
		{"taken and deleted entries give their weight back",
			func(m *Map[string, string]) []string {
				m.Put("a", "11111")
				m.Put("b", "22222")
				m.Take("a")
				m.Delete("b")
				return m.Put("c", "3333333333")
			}, "[]", "[3333333333]", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewWeighedMap[string, string](3, 10, weigh)
			if got := fmt.Sprint(tt.ops(m)); got != tt.forgot {
				t.Errorf("forgot %s, want %s", got, tt.forgot)
			}
			if got := fmt.Sprint(m.Values()); got != tt.kept {
				t.Errorf("kept %s, want %s", got, tt.kept)
			}
			if m.Weight() != tt.weight {
				t.Errorf("weight %d, want %d", m.Weight(), tt.weight)
			}
		})
	}
}

func TestTakeAndUpdate(t *testing.T) {
	m := NewMap[string, int](4)
	m.Put("a", 1)
	if !m.Update("a", func(v int) int { return v + 1 }) || m.Update("zz", func(int) int { t.Fatal("called for an absent key"); return 0 }) {
		t.Fatal("Update reported wrongly")
	}
	if v, ok := m.Take("a"); !ok || v != 2 {
		t.Fatalf("Take = %d, %v; want 2", v, ok)
	}
	if _, ok := m.Get("a"); ok {
		t.Fatal("Take left the key")
	}
}

func TestConcurrentUseIsSafe(t *testing.T) {
	m := NewMap[string, int](64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				k := fmt.Sprint(g, "-", i%100)
				m.Put(k, i)
				m.Get(k)
				m.Update(k, func(v int) int { return v + 1 })
				if i%3 == 0 {
					m.Delete(k)
				}
			}
		}()
	}
	wg.Wait()
	if m.Len() > 64 {
		t.Fatalf("len %d past the cap", m.Len())
	}
}
