package stream

import "container/list"

// window remembers the most recently seen n keys (uuids, request ids) for
// de-duplication; a key seen again moves to the front, the least recently
// seen is forgotten first. It is used by one goroutine only.
type window struct {
	n  int
	ll *list.List // front: most recent
	m  map[string]*list.Element
}

// newWindow starts empty: a thousand idle streams must not each hold a
// full-size map.
func newWindow(n int) *window {
	return &window{n: n, ll: list.New(), m: map[string]*list.Element{}}
}

// has reports whether k is remembered, refreshing it if so.
func (w *window) has(k string) bool {
	e, ok := w.m[k]
	if ok {
		w.ll.MoveToFront(e)
	}
	return ok
}

// add remembers k.
func (w *window) add(k string) {
	if w.has(k) {
		return
	}
	w.m[k] = w.ll.PushFront(k)
	if w.ll.Len() > w.n {
		old := w.ll.Back()
		w.ll.Remove(old)
		delete(w.m, old.Value.(string))
	}
}

// requestKey is the window key of a control request id; the prefix keeps
// it apart from uuids.
func requestKey(id string) string { return "\x00request:" + id }
