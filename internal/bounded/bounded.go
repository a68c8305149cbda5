package bounded

import "sync"

// Map is a concurrency-safe map of at most max entries; putting a new key
// past the cap forgets the oldest one put. The zero value is not usable:
// use NewMap.
type Map[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	seq   uint64
	m     map[K]entry[V]
	order []slot[K] // insertion order; may name keys since deleted or put again
}

type entry[V any] struct {
	v   V
	seq uint64
}

type slot[K comparable] struct {
	k   K
	seq uint64
}

// NewMap returns an empty map that keeps at most limit entries (at least 1).
func NewMap[K comparable, V any](limit int) *Map[K, V] {
	return &Map[K, V]{max: max(1, limit), m: map[K]entry[V]{}}
}

// Put sets k to v. A key put again keeps its place in the order. It
// returns the key forgotten to make room, if one was.
func (b *Map[K, V]) Put(k K, v V) (forgot K, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.m[k]; ok {
		e.v = v
		b.m[k] = e
		return forgot, false
	}
	b.seq++
	b.m[k] = entry[V]{v: v, seq: b.seq}
	b.order = append(b.order, slot[K]{k, b.seq})
	for len(b.m) > b.max {
		if old, gone := b.popLocked(); gone {
			forgot, ok = old, true
		}
	}
	if len(b.order) > 2*b.max {
		b.compactLocked() // deletions left too many stale slots
	}
	return forgot, ok
}

// popLocked forgets the oldest slot, and its entry when the slot is
// current (then it reports the key).
func (b *Map[K, V]) popLocked() (K, bool) {
	s := b.order[0]
	b.order = b.order[1:]
	if e, ok := b.m[s.k]; ok && e.seq == s.seq {
		delete(b.m, s.k)
		return s.k, true
	}
	var zero K
	return zero, false
}

func (b *Map[K, V]) compactLocked() {
	live := b.order[:0:0]
	for _, s := range b.order {
		if e, ok := b.m[s.k]; ok && e.seq == s.seq {
			live = append(live, s)
		}
	}
	b.order = live
}

// Get returns k's value.
func (b *Map[K, V]) Get(k K) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[k]
	return e.v, ok
}

// Take returns k's value and forgets it.
func (b *Map[K, V]) Take(k K) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[k]
	delete(b.m, k)
	return e.v, ok
}

// Delete forgets k.
func (b *Map[K, V]) Delete(k K) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, k)
}

// Update calls f on k's value under the map's lock and stores the result;
// false (and no call) when k is absent.
func (b *Map[K, V]) Update(k K, f func(V) V) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[k]
	if !ok {
		return false
	}
	e.v = f(e.v)
	b.m[k] = e
	return true
}

// Values returns the values, oldest put first.
func (b *Map[K, V]) Values() []V {
	b.mu.Lock()
	defer b.mu.Unlock()
	vs := make([]V, 0, len(b.m))
	for _, s := range b.order {
		if e, ok := b.m[s.k]; ok && e.seq == s.seq {
			vs = append(vs, e.v)
		}
	}
	return vs
}

// Len is how many entries the map holds.
func (b *Map[K, V]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}
