package recorder

import (
	"context"
	"sync"
)

// Recorder is a list that grows and can be waited on. The zero value is ready
// to use; a Recorder must not be copied after first use. It is safe for
// concurrent use.
type Recorder[T any] struct {
	mu      sync.Mutex
	items   []T
	changed chan struct{} // closed and replaced on every Add
}

// Add appends v and wakes every waiter.
func (r *Recorder[T]) Add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil // the next waiter makes a fresh one
	}
}

// All returns a copy of every entry so far, in the order added.
func (r *Recorder[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.items...)
}

// Any reports whether an entry so far matches pred.
func (r *Recorder[T]) Any(pred func(T) bool) bool {
	for _, v := range r.All() {
		if pred(v) {
			return true
		}
	}
	return false
}

// Wait blocks until an entry matching pred has been added (looking at those
// already added first) or ctx ends. seen is how many entries it looked at; on
// ctx's end err is context.Cause(ctx), for the caller to wrap with its own
// words.
func (r *Recorder[T]) Wait(ctx context.Context, pred func(T) bool) (v T, seen int, err error) {
	for {
		r.mu.Lock()
		// Entries are only appended, so the tail past seen is stable to read
		// after unlocking.
		items := r.items[seen:]
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		changed := r.changed
		r.mu.Unlock()
		for _, it := range items {
			if pred(it) {
				return it, seen, nil
			}
			seen++
		}
		select {
		case <-changed:
		case <-ctx.Done():
			var zero T
			return zero, seen, context.Cause(ctx)
		}
	}
}
