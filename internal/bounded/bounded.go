package bounded

import "sync"

// Map is a concurrency-safe map of at most max entries, and, when made by
// NewWeighedMap, of at most budget in weight; putting past either cap
// forgets the oldest entries put. The zero value is not usable: use
// NewMap or NewWeighedMap.
type Map[K comparable, V any] struct {
	mu     sync.Mutex
	max    int
	budget int         // 0: no budget
	weigh  func(V) int // nil when there is no budget
	weight int         // the entries' weights' sum
	seq    uint64
	m      map[K]entry[V]
	order  []slot[K] // insertion order; may name keys since deleted or put again
}

type entry[V any] struct {
	v   V
	seq uint64
	w   int
}

type slot[K comparable] struct {
	k   K
	seq uint64
}

// NewMap returns an empty map that keeps at most limit entries (at least 1).
func NewMap[K comparable, V any](limit int) *Map[K, V] {
	return &Map[K, V]{max: max(1, limit), m: map[K]entry[V]{}}
}

// NewWeighedMap returns an empty map that keeps at most limit entries
// (at least 1) whose weights, as weigh tells them, add up to at most
// budget. One entry is always kept, however heavy: the caller bounds a
// single value.
func NewWeighedMap[K comparable, V any](limit, budget int, weigh func(V) int) *Map[K, V] {
	b := NewMap[K, V](limit)
	b.budget, b.weigh = max(1, budget), weigh
	return b
}

func (b *Map[K, V]) weighOf(v V) int {
	if b.weigh == nil {
		return 0
	}
	return b.weigh(v)
}

// over says whether the map is past a cap and can forget an entry.
func (b *Map[K, V]) over() bool {
	return len(b.m) > b.max || b.weigh != nil && b.weight > b.budget && len(b.m) > 1
}

// Put sets k to v. A key put again keeps its place in the order. It
// returns the keys forgotten to make room, oldest first: at most one by
// the count, any number by the budget (a key put again may be one).
func (b *Map[K, V]) Put(k K, v V) (forgot []K) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.weighOf(v)
	if e, ok := b.m[k]; ok {
		b.weight += w - e.w
		e.v, e.w = v, w
		b.m[k] = e
	} else {
		b.seq++
		b.m[k] = entry[V]{v: v, seq: b.seq, w: w}
		b.order = append(b.order, slot[K]{k, b.seq})
		b.weight += w
	}
	for b.over() {
		if old, gone := b.popLocked(); gone {
			forgot = append(forgot, old)
		}
	}
	if len(b.order) > 2*b.max {
		b.compactLocked() // deletions left too many stale slots
	}
	return forgot
}

// popLocked forgets the oldest slot, and its entry when the slot is
// current (then it reports the key).
func (b *Map[K, V]) popLocked() (K, bool) {
	s := b.order[0]
	b.order = b.order[1:]
	if e, ok := b.m[s.k]; ok && e.seq == s.seq {
		delete(b.m, s.k)
		b.weight -= e.w
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
	b.weight -= e.w
	return e.v, ok
}

// Delete forgets k.
func (b *Map[K, V]) Delete(k K) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.weight -= b.m[k].w
	delete(b.m, k)
}

// Update calls f on k's value under the map's lock and stores the result;
// false (and no call) when k is absent. A heavier value takes a weighed
// map past its budget until the next Put, which forgets the oldest.
func (b *Map[K, V]) Update(k K, f func(V) V) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[k]
	if !ok {
		return false
	}
	e.v = f(e.v)
	w := b.weighOf(e.v)
	b.weight += w - e.w
	e.w = w
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

// Weight is the entries' weights' sum (0 for a map made by NewMap).
func (b *Map[K, V]) Weight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.weight
}

// Len is how many entries the map holds.
func (b *Map[K, V]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}
