package fakecloud

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/internal/clock"
)

// subscriber is one open subscribe WebSocket. Its writer goroutine owns all
// writes; everyone else hands it frames through out, or asks it to end
// through kill.
type subscriber struct {
	out  chan []byte
	kill chan closeReq // buffered 1; the first request wins
}

type closeReq struct {
	code websocket.StatusCode // 0 drops the connection without a close frame
	why  string
}

// stop asks the writer to end the connection; later requests are ignored.
func (sub *subscriber) stop(c closeReq) {
	select {
	case sub.kill <- c:
	default:
	}
}

// send queues a frame; a full queue closes the subscriber with 1008.
func (sub *subscriber) send(line []byte) {
	select {
	case sub.out <- line:
	default:
		sub.stop(closeReq{websocket.StatusPolicyViolation, "subscriber too slow"})
	}
}

// broadcast queues e for every subscriber of ss and wakes its event
// streams, which read the store themselves; s.mu must be held.
func (s *Server) broadcast(ss *session, e []byte) {
	for sub := range ss.subs {
		sub.send(e)
	}
	for st := range ss.streams {
		st.poke()
	}
}

// subscribe serves /v1/sessions/ws/{id}/subscribe. With replay=true the
// stored events are sent first (all of them: the fake keeps no per-client
// cursor, so clients must de-duplicate by uuid, as they must anyway).
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	ss, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found_error", "session not found")
		return
	}
	// Register before the upgrade, so that a client whose Dial returned
	// already receives what Emit sends next; and before taking a script,
	// so that a Fail then Disconnect racing this request reaches it one
	// way or the other (the script, or the hang-up), never neither.
	sub := &subscriber{out: make(chan []byte, s.opts.QueueLen), kill: make(chan closeReq, 1)}
	var replay []json.RawMessage
	s.mu.Lock()
	ss.subs[sub] = struct{}{}
	if r.URL.Query().Get("replay") == "true" {
		replay = append(replay, ss.events...)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(ss.subs, sub)
		s.mu.Unlock()
	}()
	fail := s.takeFail(r, phaseStream)
	gw := &gatedWriter{ResponseWriter: w}
	c, err := websocket.Accept(gw, r, nil)
	if err != nil {
		return // Accept has answered
	}
	c.SetReadLimit(maxLine)

	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		defer cancel() // a closed writer ends the reader too
		s.write(ctx, c, sub, replay, fail, gw.conn)
	}()
	s.read(ctx, c, ss, sub)
	cancel()
	<-writerDone
}

// gatedWriter hands websocket.Accept a connection whose reads can be
// stalled: coder/websocket answers Ping frames inside Read, so the only way
// to make a stalled server answer nothing is to keep the client's bytes from
// reaching it.
type gatedWriter struct {
	http.ResponseWriter
	conn *gatedConn
}

func (g *gatedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(g.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	g.conn = &gatedConn{Conn: c}
	return g.conn, brw, nil
}

// gatedConn passes reads through until stalled; from then on what the client
// sends is read and thrown away, so a hang-up is still seen as an error.
type gatedConn struct {
	net.Conn
	stalled atomic.Bool
}

func (g *gatedConn) Read(p []byte) (int, error) {
	for {
		n, err := g.Conn.Read(p)
		if !g.stalled.Load() || err != nil {
			return n, err
		}
	}
}

// write sends replayed then live frames, and a keep_alive every KeepAlive,
// until ctx ends or a close is asked for. A script may pace the frames
// (Delay), end the socket after fail.After frames (Close, Drop) or stall it.
func (s *Server) write(ctx context.Context, c *websocket.Conn, sub *subscriber, replay []json.RawMessage, fail *FailSpec, gate *gatedConn) {
	sent := 0
	end := func() bool {
		if fail == nil || !fail.ends() || sent < fail.After {
			return false
		}
		switch {
		case fail.Stall:
			s.stall(ctx, c, sub, gate)
		case fail.Drop:
			c.CloseNow()
		default:
			c.Close(fail.Close, "scripted close")
		}
		return true
	}
	var buf []byte // Write is done with it when it returns
	write := func(line []byte) bool {
		buf = append(append(buf[:0], line...), '\n')
		if err := c.Write(ctx, websocket.MessageText, buf); err != nil {
			c.CloseNow()
			return false
		}
		return true
	}
	var delay time.Duration
	if fail != nil {
		delay = fail.Delay
	}
	// paced is closed when the next frame may go; nil when it may go now.
	var paced <-chan struct{}
	var pacer clock.Stopper
	defer func() {
		if pacer != nil {
			pacer.Stop()
		}
	}()
	frame := func(line []byte) bool {
		if fail != nil && fail.Stall && gate != nil && sent+1 >= fail.After {
			// Stop answering before the last frame goes out: a client that
			// has it may ping at once, before the loop comes round to stall.
			gate.stalled.Store(true)
		}
		if !write(line) {
			return false
		}
		sent++
		if delay > 0 {
			paced, pacer = clock.After(s.clock, delay)
		}
		return true
	}
	ka := newTicker(s.clock, s.opts.KeepAlive)
	defer ka.Stop()
	for {
		if end() {
			return
		}
		out := sub.out
		if paced != nil {
			out = nil
		}
		if paced == nil && len(replay) > 0 {
			select {
			case <-ctx.Done():
				goingAway(c)
				return
			case k := <-sub.kill:
				k.apply(c)
				return
			default:
			}
			line := replay[0]
			replay = replay[1:]
			if !frame(line) {
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			goingAway(c)
			return
		case k := <-sub.kill:
			k.apply(c)
			return
		case <-paced:
			paced = nil
		case <-ka.C():
			if !write([]byte(`{"type":"keep_alive"}`)) {
				return
			}
		case line := <-out:
			if !frame(line) {
				return
			}
		}
	}
}

func goingAway(c *websocket.Conn) {
	c.Close(websocket.StatusGoingAway, "server closing")
	c.CloseNow()
}

func (k closeReq) apply(c *websocket.Conn) {
	if k.code == 0 {
		c.CloseNow()
	} else {
		c.Close(k.code, k.why)
	}
}

// stall holds a socket open and silent: queued frames are thrown away, the
// client's bytes too (so not even a Ping is answered), until the client hangs
// up (the reader fails and cancels ctx), the server closes, or Disconnect.
func (s *Server) stall(ctx context.Context, c *websocket.Conn, sub *subscriber, gate *gatedConn) {
	if gate != nil {
		gate.stalled.Store(true)
	}
	for {
		select {
		case <-ctx.Done():
			c.CloseNow()
			return
		case <-sub.kill:
			c.CloseNow() // a close handshake would need the reader we silenced
			return
		case <-sub.out:
		}
	}
}

// read handles what the client sends: keep_alive is echoed, initialize is
// answered with the pending prompts, other control requests are recorded and
// acknowledged. A control_response over the WebSocket is ignored:
// permission answers travel only over HTTP POST
// (docs/protocols/claude-ai-remote.md#permission-prompts-and-answers).
func (s *Server) read(ctx context.Context, c *websocket.Conn, ss *session, sub *subscriber) {
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		bad := func(line int, err error) {
			s.opts.Logf("fakecloud: %s: bad line from client: line %d: %v", ss.ID, line, err)
		}
		for _, m := range lines(data, bad) {
			switch m.Type {
			case "keep_alive":
				sub.send([]byte(`{"type":"keep_alive"}`))
			case "control_request":
				sub.send(s.control(ss, m.ControlRequest))
				s.mu.Lock()
				s.toWorker(ss, m, false)
				s.mu.Unlock()
			default:
				s.opts.Logf("fakecloud: %s: ignored %s from client over WebSocket", ss.ID, m.Type)
			}
		}
	}
}

// control records a control request from the WebSocket and builds its answer.
func (s *Server) control(ss *session, req *ControlRequest) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.controls = append(ss.controls, *req)
	return s.controlResponse(ss, req)
}

// controlResponse builds the answer to a control request: an error for a
// subtype RefuseControls named, else success; the initialize answer
// carries the models, commands and pending prompts; s.mu must be held.
func (s *Server) controlResponse(ss *session, req *ControlRequest) []byte {
	if msg, ok := ss.refuse[req.Subtype]; ok {
		b, _ := json.Marshal(map[string]any{
			"type": "control_response", "session_id": ss.ID, "created_at": s.now(),
			"response": map[string]any{"subtype": "error", "request_id": req.RequestID, "error": msg},
		})
		return b
	}
	inner := map[string]any{}
	if req.Subtype == "initialize" {
		pending := make([]json.RawMessage, 0, len(ss.pending))
		for _, p := range ss.pending {
			pending = append(pending, pendingMessage(p))
		}
		models, commands := append([]Model{}, s.opts.Models...), append([]Command{}, s.opts.Commands...)
		inner = map[string]any{
			"account": map[string]any{}, "available_output_styles": []string{"normal"},
			"commands": commands, "models": models, "output_style": "normal", "pid": os.Getpid(),
			"pending_permission_requests": pending,
		}
	}
	b, _ := json.Marshal(map[string]any{
		"type": "control_response", "session_id": ss.ID, "created_at": s.now(),
		"response": map[string]any{"subtype": "success", "request_id": req.RequestID, "response": inner},
	})
	return b
}

// RefuseControls makes the session answer control requests of subtype
// (interrupt, set_model, ...) with an error carrying msg, and not act on
// them; an empty msg answers them with success again. Posted requests are
// answered only with Options.Echo, as all are.
func (s *Server) RefuseControls(sessionID, subtype, msg string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sessionID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSession, sessionID)
	}
	if ss.refuse == nil {
		ss.refuse = map[string]string{}
	}
	if msg == "" {
		delete(ss.refuse, subtype)
	} else {
		ss.refuse[subtype] = msg
	}
	return nil
}

// SuppressEcho, on, keeps the user messages posted to the session off its
// stream and out of its history: the session (the echo worker) still gets
// and answers them, but no client sees their echo. Off, the messages kept
// are stored and streamed then: a late echo.
func (s *Server) SuppressEcho(sessionID string, on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sessionID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSession, sessionID)
	}
	ss.noEcho = on
	if on {
		return nil
	}
	for _, e := range ss.held {
		out, _, err := s.store(ss, e, sourceClient)
		if err != nil {
			return err
		}
		s.broadcast(ss, out)
	}
	ss.held = nil
	return nil
}

// pendingMessage is a pending prompt as a whole control_request message.
func pendingMessage(p ControlRequest) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": p.RequestID, "request": p.Raw})
	return b
}

// Emit pushes one NDJSON message to the session's subscribers as the server
// would: assistant, result, user, system, keep_alive, a can_use_tool
// control_request (which becomes pending) or a control_cancel_request
// (which withdraws it). Everything but keep_alive is also stored, so replay
// and the events list see it.
func (s *Server) Emit(sessionID string, line string) error {
	m, err := decode([]byte(line))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sessionID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSession, sessionID)
	}
	_, err = s.emitLocked(ss, bytes.TrimSpace([]byte(line)), m)
	return err
}

// emitLocked stores (unless keep_alive) and broadcasts a worker message,
// tracking prompts, and returns the stored uuid; s.mu must be held.
func (s *Server) emitLocked(ss *session, out []byte, m Message) (string, error) {
	switch m.Type {
	case "keep_alive":
		s.broadcast(ss, out)
		return "", nil
	case "control_request":
		if m.ControlRequest.Subtype == "can_use_tool" {
			ss.pending = append(ss.pending, *m.ControlRequest)
		}
	case "control_cancel_request":
		ss.withdraw(m.RequestID)
	}
	e, id, err := s.store(ss, out, sourceWorker)
	if err != nil {
		return "", err
	}
	s.broadcast(ss, e)
	return id, nil
}

// withdraw removes a pending prompt; false if it was not pending.
func (ss *session) withdraw(requestID string) bool {
	for i, p := range ss.pending {
		if p.RequestID == requestID {
			ss.pending = append(ss.pending[:i], ss.pending[i+1:]...)
			return true
		}
	}
	return false
}

// Permissions returns the can_use_tool prompts still waiting for an answer.
func (s *Server) Permissions(sessionID string) []ControlRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return append([]ControlRequest(nil), ss.pending...)
	}
	return nil
}

// Answers returns the control_response events posted over HTTP, in order.
func (s *Server) Answers(sessionID string) []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return append([]Answer(nil), ss.answers...)
	}
	return nil
}

// Posted returns every event posted over HTTP, decoded, in order: user
// messages, interrupts, set_permission_mode and permission answers.
func (s *Server) Posted(sessionID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return append([]Message(nil), ss.posted...)
	}
	return nil
}

// Controls returns the control requests clients sent, over the WebSocket or
// posted over HTTP (interrupt, set_permission_mode, set_model, ...), in order.
func (s *Server) Controls(sessionID string) []ControlRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return append([]ControlRequest(nil), ss.controls...)
	}
	return nil
}

// Subscribers returns how many WebSockets are open on the session.
func (s *Server) Subscribers(sessionID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return len(ss.subs)
	}
	return 0
}

// Streams returns how many v2 event streams are open on the session.
func (s *Server) Streams(sessionID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return len(ss.streams)
	}
	return 0
}

// Disconnect ends every open subscription of the session now: with a close
// frame carrying code, or, for code 0, by dropping the connection. Open v2
// event streams end too: cleanly, or cut off for code 0.
func (s *Server) Disconnect(sessionID string, code websocket.StatusCode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		for sub := range ss.subs {
			sub.stop(closeReq{code, "scripted disconnect"})
		}
		for st := range ss.streams {
			st.stop(closeReq{code, "scripted disconnect"})
		}
	}
}
