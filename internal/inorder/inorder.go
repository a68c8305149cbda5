// Package inorder lets a caller that writes one sender's messages in order
// go on to the next message before the previous one is written: a writer
// deep down (an alias worker's pipe) says, through the context, when a
// message's place in its order is fixed. Every later message it is handed
// is written after that one.
package inorder

import "context"

type key struct{}

// WithQueued returns ctx carrying fn, which Queued calls. fn must be safe
// to call more than once and from any goroutine.
func WithQueued(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, key{}, fn)
}

// Queued tells ctx's caller that the message being written has its place
// in the writer's order: the writer writes it before anything it is handed
// later, and its outcome follows. A context without WithQueued ignores it.
func Queued(ctx context.Context) {
	if fn, ok := ctx.Value(key{}).(func()); ok {
		fn()
	}
}
