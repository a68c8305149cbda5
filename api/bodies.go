package api

import (
	"io"
	"net/http"
	"sync"
)

// MaxBodies caps the request bodies being read at once on one listener
// (the control socket; TCP clients with a token, /mcp included): each may
// hold up to MaxBody, so a listener's bodies being read never hold more
// than MaxBodies*MaxBody (128 MiB) however many clients send at once. A
// request past it is refused before its body is read, with a 429 and
// Retry-After, and counted (DropBodies). Far above what a person's
// senders need: a small body is read in microseconds and gives its slot
// back. Each listener has its own slots, so TCP clients cannot stall the
// control socket's sends.
const MaxBodies = 32

// MaxAnonBodies caps the bodies of TCP requests that carry no valid token
// (login) being read at once: they come before any authentication, so
// they get slots of their own, few, and cannot take those of clients
// with a token.
const MaxAnonBodies = 4

// DropBodies is the reason Config.Drop counts a request refused past
// MaxBodies.
const DropBodies = "bodies-in-flight"

// bodyGate holds a slot per body being read.
type bodyGate chan struct{}

// take wraps r's body in a slot, given back once the body is read to its
// end, closed, or the handler returns (the returned func); false when
// none is free.
func (g bodyGate) take(r *http.Request) (release func(), ok bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return func() {}, true
	}
	select {
	case g <- struct{}{}:
	default:
		return nil, false
	}
	b := &slotBody{ReadCloser: r.Body}
	b.free = sync.OnceFunc(func() { <-g })
	r.Body = b
	return b.free, true
}

// slotBody gives its slot back at the end of the body.
type slotBody struct {
	io.ReadCloser
	free func()
}

func (b *slotBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.free()
	}
	return n, err
}

func (b *slotBody) Close() error {
	b.free()
	return b.ReadCloser.Close()
}
