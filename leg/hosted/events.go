package hosted

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// pump turns what one CLI process writes into the router's events, until
// it ends; then the session is reported exited and its open prompts and
// control requests are settled.
func (l *Leg) pump(s *session, p *proc) {
	defer l.wg.Done()
	ctx := l.ctx()
	for m := range p.lines {
		l.mu.Lock()
		evs := l.handleLocked(s, p, m)
		l.mu.Unlock()
		for _, ev := range evs {
			l.emitter.Emit(ctx, ev)
		}
	}
	<-p.done
	l.mu.Lock()
	if p.junk > 0 {
		l.junk.Add(uint64(p.junk))
	}
	var evs []message.Event
	if s.p == p {
		s.p, s.state = nil, "exited"
		s.detail = "the CLI ended"
		switch {
		case p.stuck.Load():
			s.detail = fmt.Sprintf("stopped: the CLI left its input unread for %s (its turns are kept for its next start)", writeTimeout)
		case p.err != nil:
			s.detail = "the CLI ended: " + p.err.Error()
		}
		for id, req := range s.prompts {
			req.State = message.PermissionCancelled
			evs = append(evs, message.Event{Type: message.EventPermission, Leg: message.ProtocolHosted, Time: l.clk.Now(), Permission: &req})
			delete(s.prompts, id)
		}
		for id, c := range s.controls {
			close(c)
			delete(s.controls, id)
		}
		l.noteLocked(s)
	}
	name, detail := s.rec.Name, s.detail
	l.mu.Unlock()
	if ctx.Err() == nil {
		l.log.Warn("hosted session's CLI ended", "name", name, "why", detail)
	}
	l.log.Debug("hosted session's CLI stderr", "name", name, "stderr", p.stderr.String())
	for _, ev := range evs {
		l.emitter.Emit(ctx, ev)
	}
}

func (l *Leg) ctx() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runCtx == nil {
		return context.Background()
	}
	return l.runCtx
}

// handleLocked is one line of the CLI's output as events.
func (l *Leg) handleLocked(s *session, p *proc, m wire.Message) []message.Event {
	now := l.clk.Now()
	addr := AddressPrefix + s.rec.Name
	re := &message.RemoteEvent{SessionID: s.rec.SessionID, Address: addr, Kind: m.Type, UUID: m.UUID, Raw: m.Raw}
	var more []message.Event
	switch m.Kind {
	case wire.KindKeepAlive:
		return nil
	case wire.KindSystem:
		if m.System != nil && m.System.Subtype == "init" {
			if s.rec.SessionID == "" && m.SessionID != "" {
				s.rec.SessionID, re.SessionID = m.SessionID, m.SessionID
				_ = l.store.save()
			}
			if s.state == "starting" {
				s.state = "idle"
			}
			if !agents[s.rec.Agent].echoes && len(s.rec.Turns) > 0 {
				more = append(more, l.tookLocked(s, s.rec.Turns[0].UUID, "", now)...)
			}
		}
	case wire.KindUser:
		re.Text = m.User.Content.Text()
		if agents[s.rec.Agent].echoes {
			more = append(more, l.tookLocked(s, m.UUID, re.Text, now)...)
		}
	case wire.KindAssistant:
		s.state = "working"
		re.MessageID, re.Final, re.Text = m.Assistant.ID, m.Assistant.StopReason != "", m.Assistant.Content.Text()
	case wire.KindResult:
		s.state = "idle"
		re.Final, re.Text = true, m.Result.Result
		more = append(more, l.replyLocked(s, m.Result, now)...)
		// The turn is over: a prompt it left open can no longer be answered
		// (Qwen Code says nothing of a prompt an interrupt cut short).
		for id, req := range s.prompts {
			req.State = message.PermissionCancelled
			more = append(more, message.Event{Type: message.EventPermission, Leg: message.ProtocolHosted, Time: now, Permission: &req})
			delete(s.prompts, id)
		}
		if len(s.rec.Turns) > 0 {
			s.state = "working" // the CLI takes the next queued turn
		}
	case wire.KindControlRequest:
		more = append(more, l.requestLocked(s, p, m.ControlRequest, now)...)
		re.Control = &message.RemoteControl{RequestID: m.ControlRequest.RequestID}
	case wire.KindControlResponse:
		cr := m.ControlResponse
		if c, ok := s.controls[cr.RequestID]; ok {
			c <- cr
			delete(s.controls, cr.RequestID)
		}
		re.Control = &message.RemoteControl{RequestID: cr.RequestID, Error: cr.Error}
	case wire.KindControlCancelRequest:
		if req, ok := s.prompts[m.Cancel.RequestID]; ok {
			delete(s.prompts, m.Cancel.RequestID)
			req.State = message.PermissionCancelled
			more = append(more, message.Event{Type: message.EventPermission, Leg: message.ProtocolHosted, Time: now, Permission: &req})
		}
	}
	return append([]message.Event{{Type: message.EventRemote, Leg: message.ProtocolHosted, Time: now, Remote: re}}, more...)
}

// tookLocked: the CLI took the turn id (or the oldest with text): it
// leaves hosted.json, and its message is delivered.
func (l *Leg) tookLocked(s *session, id, text string, now time.Time) []message.Event {
	t, ok := s.takeTurn(id, text)
	if !ok {
		return nil
	}
	s.rec.Resumable = true
	_ = l.store.save()
	s.state = "working"
	if len(s.taken) >= maxWaitingReplies { // answers that never come
		s.taken = s.taken[1:]
	}
	s.taken = append(s.taken, t)
	if t.MsgID == "" || isStartTurn(t.MsgID) {
		return nil
	}
	return []message.Event{{Type: message.EventReceipt, Leg: message.ProtocolHosted, Time: now,
		Receipt: &message.Receipt{MsgID: t.MsgID, Status: message.StatusDelivered, Detail: "taken by the session's CLI", Time: now}}}
}

// maxWaitingReplies bounds the turns waiting for their answer.
const maxWaitingReplies = 64

// replyLocked: a result answers the oldest turn taken; when a session sent
// it, the result's text goes back to that session as a message from this
// one, through the router's bridge (AliasOf names whom to deliver to), as
// a remote session's answer does.
func (l *Leg) replyLocked(s *session, r *wire.Result, now time.Time) []message.Event {
	if len(s.taken) == 0 {
		return nil
	}
	t := s.taken[0]
	s.taken = s.taken[1:]
	text := r.Result
	if r.IsError && text == "" {
		text = "(the hosted session's turn ended with " + r.Subtype + ")"
	}
	if t.From == nil || strings.TrimSpace(text) == "" {
		return nil
	}
	mode := t.From.Mode
	if mode == message.ModeUnknown {
		mode = message.ModePrompting
	}
	m := &message.Message{ID: uuid.NewString(), From: AddressPrefix + s.rec.Name, FromName: s.rec.Name, FromSession: s.rec.SessionID,
		To: t.From.Address, ToName: t.From.Name, ToSessionID: t.From.SessionID, AliasOf: t.From.Address,
		Body: text, Mode: mode, Attested: true, HopChain: t.From.HopChain, Protocol: message.ProtocolHosted, Time: now}
	return []message.Event{{Type: message.EventMessage, Leg: message.ProtocolHosted, Time: now, Message: m}}
}

func isStartTurn(id string) bool { return len(id) > 6 && id[:6] == "start-" }

// takeTurn removes the queued turn the CLI echoed: by its uuid, else the
// oldest with its text (a CLI that echoes without our uuid).
func (s *session) takeTurn(id, text string) (turn, bool) {
	i := slices.IndexFunc(s.rec.Turns, func(t turn) bool { return id != "" && t.UUID == id })
	if i < 0 {
		i = slices.IndexFunc(s.rec.Turns, func(t turn) bool { return t.Text == text })
	}
	if i < 0 {
		return turn{}, false
	}
	t := s.rec.Turns[i]
	s.rec.Turns = slices.Delete(s.rec.Turns, i, i+1)
	return t, true
}

// requestLocked handles a control_request from the CLI: a can_use_tool
// prompt becomes a pending prompt; anything else is refused at once, so
// the CLI never waits on a request the gateway does not serve.
func (l *Leg) requestLocked(s *session, p *proc, cr *wire.ControlRequest, now time.Time) []message.Event {
	if cr.Subtype != wire.SubtypeCanUseTool || len(s.prompts) >= maxOpenPrompts {
		why := fmt.Sprintf("the gateway does not serve %s requests of a hosted session", cr.SubtypeRaw)
		if cr.Subtype == wire.SubtypeCanUseTool {
			why = "too many prompts of this session are open"
		}
		if line, err := wire.ErrorEvent(uuid.NewString(), cr.RequestID, why); err == nil {
			_ = p.enqueue(line) // full: the CLI is not reading, and is being stopped
		}
		return nil
	}
	req := message.PermissionRequest{
		SessionID: s.rec.SessionID, Address: AddressPrefix + s.rec.Name, Name: s.rec.Name, Leg: message.ProtocolHosted,
		Source: message.SourceHosted, RequestID: cr.RequestID, ToolName: cr.ToolName, ToolUseID: cr.ToolUseID,
		Description: cr.Description, Input: cr.Input, Created: now.UTC(), State: message.PermissionPending,
		Suggestions: message.ParseSuggestions(cr.PermissionSuggestions),
	}
	if len(req.Input) == 0 {
		req.Input = json.RawMessage(`{}`)
	}
	if qs, err := cr.Questions(); err == nil {
		for _, q := range qs {
			mq := message.Question{Question: q.Question, Header: q.Header, MultiSelect: q.MultiSelect}
			for _, o := range q.Options {
				mq.Options = append(mq.Options, o.Label)
			}
			req.Questions = append(req.Questions, mq)
		}
	}
	req.Classify()
	s.prompts[cr.RequestID] = req
	return []message.Event{{Type: message.EventPermission, Leg: message.ProtocolHosted, Time: now, Permission: &req}}
}
