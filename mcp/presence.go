package mcp

import "time"

// An HTTP client gives no sign that it is gone but silence: a live one
// holds its event stream open (both SDKs open it once initialized) or has
// a request under way. A session with neither is detached, and ends after
// StreamGone if it had held a stream (a live client reconnects at once),
// after Quiet if it never did. The SDK's own SessionIdle stays the bound
// for a session that holds a stream and sends nothing.

// attach counts a request of the session under way; false when the
// session has ended (or is being ended as gone), which the request is
// told rather than dying under it. Called with cn.mu free.
func (cn *conn) attach() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.ended {
		return false
	}
	cn.inflight++
	cn.gen++ // a timer already fired finds itself stale
	if cn.idle != nil {
		cn.idle.Stop()
		cn.idle = nil
	}
	return true
}

// detach ends a request counted by attach; stream says it was the event
// stream.
func (cn *conn) detach(stream bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.inflight--
	cn.streamed = cn.streamed || stream
	if cn.inflight == 0 {
		cn.arm()
	}
}

// arm starts the detached timer; cn.mu is held.
func (cn *conn) arm() {
	if cn.ended || cn.inflight > 0 {
		return
	}
	if cn.idle != nil {
		cn.idle.Stop()
	}
	cn.gen++
	gen, after := cn.gen, cn.s.quiet
	if cn.streamed {
		after = cn.s.streamGone
	}
	cn.idle = time.AfterFunc(after, func() { cn.gone(gen, after) })
}

// disarm stops the timer for good once the session has ended.
func (cn *conn) disarm() {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.ended = true
	if cn.idle != nil {
		cn.idle.Stop()
		cn.idle = nil
	}
}

// gone ends a session left detached since the timer of gen was armed.
func (cn *conn) gone(gen int, after time.Duration) {
	cn.mu.Lock()
	if gen != cn.gen || cn.inflight > 0 || cn.ended {
		cn.mu.Unlock()
		return
	}
	ss, name := cn.ss, ""
	if cn.c != nil {
		name = cn.c.Name
	}
	cn.ended = true // a request that comes now is told, not cut off
	cn.idle = nil
	cn.mu.Unlock()
	cn.s.cfg.Drop(DropGone)
	cn.s.log.Info("mcp client gone: no event stream and no request", "name", name, "after", after)
	cn.leave()
	if ss != nil {
		_ = ss.Close()
	}
}
