package remote

import (
	"encoding/json"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/remote/stream"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// update is one update of a followed session on its way to router
// events. Every update but a keep-alive yields its remote event re, which
// the kind's translation fills in, followed by what the kind adds.
type update struct {
	id, addr string // the session and its bridge: address
	f        *follow
	m        wire.Message
	re       *message.RemoteEvent
	now      time.Time
}

// bridgeAddr is the bridge: address of a remote session.
func bridgeAddr(id string) string {
	return addressing.Address{Kind: addressing.KindBridge, ID: id}.String()
}

// events is the remote event followed by more.
func (u *update) events(more ...message.Event) []message.Event {
	return append([]message.Event{{Type: message.EventRemote, Leg: message.ProtocolRemote, Time: u.now, Remote: u.re}}, more...)
}

// permission is the event that tells the router about req.
func (u *update) permission(req message.PermissionRequest) message.Event {
	return message.Event{Type: message.EventPermission, Leg: message.ProtocolRemote, Time: u.now, Permission: &req}
}

// translate turns one update of session id into router events. It runs on
// the session's own goroutine, which alone touches f's maps.
func (l *Leg) translate(id string, f *follow, su stream.Update) []message.Event {
	m := su.Message
	u := &update{id: id, addr: bridgeAddr(id), f: f, m: m, now: l.cfg.Now()}
	u.re = &message.RemoteEvent{SessionID: id, Address: u.addr, Kind: m.Type, UUID: m.UUID, Seq: su.Seq, Raw: m.Raw}
	if u.re.UUID == "" {
		u.re.UUID = su.EventID
	}
	switch m.Kind {
	case wire.KindKeepAlive:
		return nil
	case wire.KindAssistant:
		return l.assistant(u)
	case wire.KindUser:
		return l.user(u)
	case wire.KindResult:
		return l.result(u)
	case wire.KindControlRequest:
		return l.request(u)
	case wire.KindControlCancelRequest:
		l.settledElsewhere(f, m.Cancel.RequestID, message.PromptSettledError{State: message.PermissionCancelled})
		return u.cancel()
	case wire.KindControlResponse:
		if cr := m.ControlResponse; cr != nil {
			if cr.Decision != nil && u.re.UUID != answerUUID(id, cr.RequestID) {
				l.settledElsewhere(f, cr.RequestID, message.PromptSettledError{State: message.PermissionAnswered,
					Behavior: message.Behavior(cr.Decision.Behavior), By: "remote"})
			}
			l.response(id, f, cr, u.now)
			u.re.Control = &message.RemoteControl{RequestID: cr.RequestID, Error: cr.Error}
		}
		return u.answered()
	case wire.KindSystem:
		l.system(id, f, m, u.now)
	}
	return u.events()
}

// assistant follows a streamed assistant message. With ReplyAssistant, a
// finished top-level one answers the senders of the running turn.
func (l *Leg) assistant(u *update) []message.Event {
	f := u.f
	l.beginTurn(u.id, f)
	a := f.merge(*u.m.Assistant)
	u.re.MessageID, u.re.Final, u.re.Text = a.ID, a.StopReason != "", a.Content.Text()
	if u.re.Final && l.cfg.Reply == ReplyAssistant && len(f.current) > 0 && u.m.ParentToolUseID == "" {
		return u.events(l.replies(u.id, f.current, u.re.Text, u.now)...)
	}
	return u.events()
}

// merge folds a streamed copy into the copies of its message seen so far
// and returns the whole message; a finished one is forgotten.
func (f *follow) merge(a wire.Assistant) wire.Assistant {
	if prev, ok := f.assistant[a.ID]; ok && a.ID != "" {
		a = wire.MergeAssistant(prev, a)
	}
	if a.StopReason != "" {
		delete(f.assistant, a.ID)
	} else if a.ID != "" {
		if len(f.assistant) >= 64 { // a stream that never finishes its messages
			clear(f.assistant)
		}
		f.assistant[a.ID] = a
	}
	return a
}

// user follows a user event; the echo of one we posted is its delivered
// receipt, and its sender now waits for the session's answer.
func (l *Leg) user(u *update) []message.Event {
	u.re.Text = u.m.User.Content.Text()
	ev, reply, ok := l.echoed(u.re.UUID, u.now)
	if !ok {
		return u.events()
	}
	l.forgetUnechoed(u.id, u.re.UUID)
	if reply != nil {
		u.f.await(*reply)
	}
	return u.events(ev)
}

// result ends a turn. With ReplyResult its text answers the turn's senders.
func (l *Leg) result(u *update) []message.Event {
	r := u.m.Result
	u.re.Final, u.re.Text = true, r.Result
	to := u.f.endTurn()
	if l.cfg.Reply != ReplyResult {
		return u.events()
	}
	text := r.Result
	if r.IsError && text == "" {
		text = "(the remote session's turn ended with " + r.Subtype + ")"
	}
	return u.events(l.replies(u.id, to, text, u.now)...)
}

// prompt raises a can_use_tool request as a pending permission prompt.
func (l *Leg) prompt(u *update) []message.Event {
	cr := u.m.ControlRequest
	req := permission(u.id, u.addr, cr, u.now)
	forgot := l.keepPrompt(u.id, u.f, req, u.now)
	return u.events(append([]message.Event{u.permission(req)}, forgot...)...)
}

// cancel settles a prompt the session withdrew.
func (u *update) cancel() []message.Event {
	rid := u.m.Cancel.RequestID
	req, ok := u.f.prompts.Take(rid)
	if !ok {
		req = message.PermissionRequest{SessionID: u.id, Address: u.addr, Leg: message.ProtocolRemote, RequestID: rid}
	}
	req.State = message.PermissionCancelled
	return u.events(u.permission(req))
}

// answered follows a control_response. The server echoes posted answers on
// the stream. Ours the router settles itself; one from elsewhere
// (claude.ai, another client) settles the prompt here.
func (u *update) answered() []message.Event {
	cr := u.m.ControlResponse
	if cr != nil && cr.Initialize != nil {
		// The answer to our own initialize, on every (re)connect: its
		// pending prompts come as updates of their own.
		return nil
	}
	if cr == nil || cr.Decision == nil {
		return u.events()
	}
	req, ok := u.f.prompts.Take(cr.RequestID)
	if u.re.UUID == answerUUID(u.id, cr.RequestID) {
		return u.events()
	}
	if !ok {
		// Not open here (forgotten past the cap, or never seen): the
		// router settles it by its request id if it has it.
		req = message.PermissionRequest{SessionID: u.id, Address: u.addr, Leg: message.ProtocolRemote, RequestID: cr.RequestID}
	}
	req.State = message.PermissionAnswered
	req.Answer = &message.PermissionAnswer{Behavior: message.Behavior(cr.Decision.Behavior), Message: cr.Decision.Message, By: "remote"}
	return u.events(u.permission(req))
}

// permission is the pending prompt a can_use_tool request raises.
func permission(id, addr string, cr *wire.ControlRequest, now time.Time) message.PermissionRequest {
	req := message.PermissionRequest{
		SessionID: id, Address: addr, Leg: message.ProtocolRemote, RequestID: cr.RequestID,
		ToolName: cr.ToolName, ToolUseID: cr.ToolUseID, Description: cr.Description,
		Input: cr.Input, Created: now, State: message.PermissionPending,
		Suggestions: message.ParseSuggestions(cr.PermissionSuggestions),
	}
	req.Classify()
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
	return req
}
