package fakecloud

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"github.com/coder/websocket"

	"github.com/sessiongateway/gateway/transport/remotews"
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
	fail := s.takeFail(r, true)
	// Register before the upgrade, so that a client whose Dial returned
	// already receives what Emit sends next.
	sub := &subscriber{out: make(chan []byte, s.opts.QueueLen), kill: make(chan closeReq, 1)}
	var replay []json.RawMessage
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "api_error", "shutting down")
		return
	}
	ss.subs[sub] = struct{}{}
	if r.URL.Query().Get("replay") == "true" {
		replay = append(replay, ss.events...)
	}
	s.subWG.Add(1)
	s.mu.Unlock()
	defer s.subWG.Done()
	defer func() {
		s.mu.Lock()
		delete(ss.subs, sub)
		s.mu.Unlock()
	}()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	c.SetReadLimit(remotews.MaxLine)

	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		defer cancel() // a closed writer ends the reader too
		s.write(ctx, c, sub, replay, fail)
	}()
	s.read(ctx, c, ss, sub)
	cancel()
	<-writerDone
}

// write sends replayed then live frames until ctx ends or a close is asked
// for, applying a scripted WebSocket failure after fail.After frames.
func (s *Server) write(ctx context.Context, c *websocket.Conn, sub *subscriber, replay []json.RawMessage, fail *FailSpec) {
	sent := 0
	end := func() bool {
		if fail == nil || sent < fail.After {
			return false
		}
		if fail.Drop {
			c.CloseNow()
		} else {
			c.Close(fail.Close, "scripted close")
		}
		return true
	}
	frame := func(line []byte) bool {
		if end() {
			return false
		}
		if err := c.Write(ctx, websocket.MessageText, append(bytes.Clone(line), '\n')); err != nil {
			c.CloseNow()
			return false
		}
		sent++
		return true
	}
	for _, line := range replay {
		if !frame(line) {
			return
		}
	}
	for {
		if end() {
			return
		}
		select {
		case <-ctx.Done():
			c.Close(websocket.StatusGoingAway, "server closing")
			c.CloseNow()
			return
		case k := <-sub.kill:
			if k.code == 0 {
				c.CloseNow()
			} else {
				c.Close(k.code, k.why)
			}
			return
		case line := <-sub.out:
			if !frame(line) {
				return
			}
		}
	}
}

// read handles what the client sends: keep_alive is echoed, initialize is
// answered with the pending prompts, other control requests are recorded and
// acknowledged. A control_response over the WebSocket is ignored: seed 001
// says permission answers travel only over HTTP POST.
func (s *Server) read(ctx context.Context, c *websocket.Conn, ss *session, sub *subscriber) {
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		rd := remotews.NewNDJSONReader(bytes.NewReader(data), 0)
		for {
			m, err := rd.Next()
			if err != nil {
				if _, ok := err.(*remotews.LineError); ok {
					s.opts.Logf("fakecloud: %s: bad line from client: %v", ss.ID, err)
					continue
				}
				break // io.EOF: the frame is done
			}
			switch m.Kind {
			case remotews.KindKeepAlive:
				sub.send([]byte(`{"type":"keep_alive"}`))
			case remotews.KindControlRequest:
				sub.send(s.control(ss, m.ControlRequest))
			default:
				s.opts.Logf("fakecloud: %s: ignored %s from client over WebSocket", ss.ID, m.Type)
			}
		}
	}
}

// control records a control request from the WebSocket and builds its answer.
func (s *Server) control(ss *session, req *remotews.ControlRequest) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.controls = append(ss.controls, *req)
	inner := map[string]any{}
	if req.Subtype == remotews.SubtypeInitialize {
		pending := make([]json.RawMessage, 0, len(ss.pending))
		for _, p := range ss.pending {
			pending = append(pending, pendingMessage(p))
		}
		inner = map[string]any{
			"account": map[string]any{}, "available_output_styles": []string{"normal"},
			"commands": []any{}, "models": []any{}, "output_style": "normal", "pid": os.Getpid(),
			"pending_permission_requests": pending,
		}
	}
	b, _ := json.Marshal(map[string]any{
		"type": "control_response", "session_id": ss.ID, "created_at": s.now(),
		"response": map[string]any{"subtype": "success", "request_id": req.RequestID, "response": inner},
	})
	return b
}

// pendingMessage is a pending prompt as a whole control_request message.
func pendingMessage(p remotews.ControlRequest) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": p.RequestID, "request": p.Raw})
	return b
}

// Emit pushes one NDJSON message to the session's subscribers as the server
// would: assistant, result, user, system, keep_alive, a can_use_tool
// control_request (which becomes pending) or a control_cancel_request
// (which withdraws it). Everything but keep_alive is also stored, so replay
// and the events list see it.
func (s *Server) Emit(sessionID string, line string) error {
	m, err := remotews.Decode([]byte(line))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sessionID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSession, sessionID)
	}
	out := bytes.TrimSpace([]byte(line))
	switch m.Kind {
	case remotews.KindKeepAlive:
		s.broadcast(ss, out)
		return nil
	case remotews.KindControlRequest:
		if m.ControlRequest.Subtype == remotews.SubtypeCanUseTool {
			ss.pending = append(ss.pending, *m.ControlRequest)
		}
	case remotews.KindControlCancelRequest:
		for i, p := range ss.pending {
			if p.RequestID == m.Cancel.RequestID {
				ss.pending = append(ss.pending[:i], ss.pending[i+1:]...)
				break
			}
		}
	}
	e, err := s.store(ss, out, sourceWorker)
	if err != nil {
		return err
	}
	s.broadcast(ss, e)
	return nil
}

// Permissions returns the can_use_tool prompts still waiting for an answer.
func (s *Server) Permissions(sessionID string) []remotews.ControlRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return append([]remotews.ControlRequest(nil), ss.pending...)
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
func (s *Server) Posted(sessionID string) []remotews.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return append([]remotews.Message(nil), ss.posted...)
	}
	return nil
}

// Controls returns the control requests clients sent over the WebSocket.
func (s *Server) Controls(sessionID string) []remotews.ControlRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss, ok := s.sessions[sessionID]; ok {
		return append([]remotews.ControlRequest(nil), ss.controls...)
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
