package uds

import (
	"net"
	"sync"
)

// peerKey is who a connection's per-peer allowance is counted against.
type peerKey struct{ uid, pid int }

// slotTable is Serve's record of which peer holds which connections. A
// peer has MaxConnsPerPeer connections served at once; up to as many more
// wait, accepted but unread, and are served in turn as the peer's own
// connections end, so a burst from one process (Node opens every socket of
// a loop at once) loses nothing. A waiting connection holds no slot of
// MaxConns, so what one process queues costs others nothing; all peers
// together keep at most MaxConns waiting.
type slotTable struct {
	perPeer, maxWaiting int

	mu      sync.Mutex
	peers   map[peerKey]*peerSlots
	waiting int
	active  map[*Conn]struct{}
	shut    bool
}

type peerSlots struct {
	active int
	queue  []waitingConn // oldest first
}

type waitingConn struct {
	uc   *net.UnixConn
	cred Cred
}

type admission uint8

const (
	admitServe  admission = iota + 1 // serve it now
	admitWait                        // queued behind the peer's own connections
	admitRefuse                      // the peer's queue (or everyone's) is full: close it
)

func newSlotTable(lim Limits) *slotTable {
	return &slotTable{perPeer: lim.MaxConnsPerPeer, maxWaiting: lim.MaxConns,
		peers: map[peerKey]*peerSlots{}, active: map[*Conn]struct{}{}}
}

// admit decides a freshly accepted connection from cred.
func (t *slotTable) admit(uc *net.UnixConn, cred Cred) admission {
	key := peerKey{uid: cred.UID, pid: cred.PID}
	t.mu.Lock()
	defer t.mu.Unlock()
	ps := t.peers[key]
	if ps == nil {
		ps = &peerSlots{}
		t.peers[key] = ps
	}
	switch {
	case t.shut:
		return admitRefuse
	case ps.active < t.perPeer:
		ps.active++
		return admitServe
	case len(ps.queue) < t.perPeer && t.waiting < t.maxWaiting:
		ps.queue = append(ps.queue, waitingConn{uc, cred})
		t.waiting++
		return admitWait
	}
	return admitRefuse
}

// start records c as served; false means Serve is shutting down.
func (t *slotTable) start(c *Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shut {
		return false
	}
	t.active[c] = struct{}{}
	return true
}

// finish records that a connection from cred has ended (c, or nil when it
// never started) and returns the peer's next waiting connection, which
// takes its place, if there is one.
func (t *slotTable) finish(c *Conn, cred Cred) (waitingConn, bool) {
	key := peerKey{uid: cred.UID, pid: cred.PID}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.active, c)
	ps := t.peers[key]
	if len(ps.queue) > 0 && !t.shut {
		next := ps.queue[0]
		ps.queue = ps.queue[1:]
		t.waiting--
		return next, true
	}
	if ps.active--; ps.active == 0 && len(ps.queue) == 0 {
		delete(t.peers, key)
	}
	return waitingConn{}, false
}

// shutdown interrupts every served connection and closes every waiting one.
func (t *slotTable) shutdown() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.shut = true
	for c := range t.active {
		c.shutdown()
	}
	for _, ps := range t.peers {
		for _, w := range ps.queue {
			_ = w.uc.Close()
		}
		ps.queue = nil
	}
	t.waiting = 0
}
