package api

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
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
// with a token. One remote address holds at most MaxAnonBodiesPerIP of
// them, each body is at most MaxAnonBody and must arrive within
// AnonReadTimeout: one client stalling its logins cannot keep every
// browser from signing in.
const (
	MaxAnonBodies      = 4
	MaxAnonBodiesPerIP = 1
	MaxAnonBody        = 4 << 10 // a token or a pairing code, in JSON
	AnonReadTimeout    = 3 * time.Second
)

// DropBodies is the reason Config.Drop counts a request refused past
// MaxBodies.
const DropBodies = "bodies-in-flight"

// MaxBodiesPerGrant is one token's share of a TCP listener's MaxBodies: a
// token that leaks or loops can stall at most a quarter of them, and the
// others still find room.
const MaxBodiesPerGrant = MaxBodies / 4

// bodyGate holds a slot per body being read; with a share, one client (by
// its key: a grant's id, a remote address) holds at most that many.
type bodyGate struct {
	slots chan struct{}
	share int
	key   func(*http.Request) string
	mu    sync.Mutex
	held  map[string]int // slots taken by client, when shared
}

func newBodyGate(n, share int, key func(*http.Request) string) *bodyGate {
	return &bodyGate{slots: make(chan struct{}, n), share: share, key: key, held: map[string]int{}}
}

// byGrant and byIP are the clients bodyGate shares among.
func byGrant(r *http.Request) string { g, _ := GrantFrom(r.Context()); return g.ID }
func byIP(r *http.Request) string    { return remoteIP(r) }

// anonBody caps the body of a TCP request before a token (MaxAnonBody)
// and gives it AnonReadTimeout to arrive.
func anonBody(w http.ResponseWriter, r *http.Request) *http.Request {
	if r.Body == nil || r.Body == http.NoBody {
		return r
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(AnonReadTimeout))
	r.Body = http.MaxBytesReader(w, r.Body, MaxAnonBody)
	return r
}

// take wraps r's body in a slot, given back once the body is read to its
// end, closed, or the handler returns (the returned func); false, with
// why, when none is free (or r's grant holds its share).
func (g *bodyGate) take(r *http.Request) (release func(), why string) {
	if r.Body == nil || r.Body == http.NoBody {
		return func() {}, ""
	}
	who := ""
	if g.share > 0 {
		who = g.key(r)
		g.mu.Lock()
		if g.held[who] >= g.share {
			g.mu.Unlock()
			return nil, fmt.Sprintf("this client has %d bodies being read", g.share)
		}
		g.held[who]++
		g.mu.Unlock()
	}
	select {
	case g.slots <- struct{}{}:
	default:
		g.unshare(who)
		return nil, fmt.Sprintf("%d bodies are being read", cap(g.slots))
	}
	b := &slotBody{ReadCloser: r.Body}
	b.free = sync.OnceFunc(func() { <-g.slots; g.unshare(who) })
	r.Body = b
	return b.free, ""
}

func (g *bodyGate) unshare(who string) {
	if g.share == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held[who]--; g.held[who] <= 0 {
		delete(g.held, who)
	}
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
