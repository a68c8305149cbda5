package remote

import (
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
)

// replyTo is a local sender waiting for a remote session's answer.
type replyTo struct {
	msgID       string
	from        string // the sender's address
	fromName    string
	fromSession string
	hopChain    []string
	mode        message.Mode
}

// postedMsg is what a user event we posted carried.
type postedMsg struct {
	msgID string
	reply *replyTo // nil unless a local session sent it through the bridge
}

// beginTurn: the first assistant message begins a turn, which answers the
// messages the session had by then: those echoed, and those accepted and
// not (yet) echoed, so a late or missing echo costs no answer.
func (l *Leg) beginTurn(id string, f *follow) {
	if !f.turnActive {
		f.turnActive, f.current, f.waiting = true, append(f.waiting, l.takeUnechoed(id)...), nil
	}
}

// unechoed is a post with a local sender, accepted and not yet echoed.
type unechoed struct {
	uuid string
	at   time.Time // when it was posted
}

// maxUnechoedAge is how long a post may wait for its echo and still be
// answered by a turn that begins without it. The echo normally comes
// within seconds; one missed (a stream down meanwhile) comes with the
// stream's recovery, which hands its sender to the turn it began. An older
// one would give a later, unrelated turn's answer to this sender.
const maxUnechoedAge = 2 * time.Minute

// unechoedPost notes a post with a local sender to answer: the next turn of
// session id answers it, echoed or not (a failed post is forgotten).
func (l *Leg) unechoedPost(id, evUUID string) {
	now := l.cfg.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.unechoed[id]; !ok && len(l.unechoed) >= maxPosted {
		return // posts to that many sessions: this one's answer needs its echo
	}
	q := l.unechoed[id]
	if len(q) >= maxWaiting {
		q = q[1:]
	}
	l.unechoed[id] = append(q, unechoed{uuid: evUUID, at: now})
}

// takeUnechoed takes the senders of session id's recent posts not yet
// echoed. Their posts stay known, so the echo still makes the delivered
// receipt, and changes nothing else.
func (l *Leg) takeUnechoed(id string) []replyTo {
	now := l.cfg.Now()
	l.mu.Lock()
	q := l.unechoed[id]
	delete(l.unechoed, id)
	l.mu.Unlock()
	var to []replyTo
	for _, u := range q {
		if now.Sub(u.at) > maxUnechoedAge {
			continue
		}
		l.posted.Update(u.uuid, func(pm postedMsg) postedMsg {
			if pm.reply != nil {
				to = append(to, *pm.reply)
				pm.reply = nil
			}
			return pm
		})
	}
	return to
}

// forgetUnechoed forgets a post of session id as not yet echoed: it was
// echoed, or it failed.
func (l *Leg) forgetUnechoed(id, evUUID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.unechoed[id]
	if i := slices.IndexFunc(q, func(u unechoed) bool { return u.uuid == evUUID }); i >= 0 {
		q = slices.Delete(q, i, i+1)
	}
	if len(q) == 0 {
		delete(l.unechoed, id)
	} else {
		l.unechoed[id] = q
	}
}

// await notes a sender whose message reached the session.
func (f *follow) await(r replyTo) {
	if len(f.waiting) >= maxWaiting { // answers that never come
		f.waiting = f.waiting[1:]
	}
	f.waiting = append(f.waiting, r)
}

// endTurn ends the running turn and returns the senders it answers: a
// turn that ended without an assistant message answers those waiting.
func (f *follow) endTurn() []replyTo {
	to := f.current
	if !f.turnActive {
		to = f.waiting
		f.waiting = nil
	}
	f.turnActive, f.current = false, nil
	return to
}

// echoed reports a delivered receipt when a user event we posted comes back
// on the live stream: the server stored it in the session's history.
func (l *Leg) echoed(eventUUID string, now time.Time) (message.Event, *replyTo, bool) {
	if eventUUID == "" {
		return message.Event{}, nil, false
	}
	pm, ok := l.posted.Take(eventUUID)
	if !ok {
		return message.Event{}, nil, false
	}
	rc := &message.Receipt{MsgID: pm.msgID, Status: message.StatusDelivered, Detail: "in the session's history", Time: now}
	return message.Event{Type: message.EventReceipt, Leg: message.ProtocolRemote, Time: now, Receipt: rc}, pm.reply, true
}

// replies are the messages that carry text, an answer of session id, back
// to the local senders in to: from the session's alias, through the
// router's bridge (AliasOf names the sender to deliver to).
func (l *Leg) replies(id string, to []replyTo, text string, now time.Time) []message.Event {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	addr := bridgeAddr(id)
	name := l.aliasName(id)
	var evs []message.Event
	for _, r := range to {
		if r.mode == message.ModeUnknown {
			r.mode = message.ModePrompting
		}
		m := &message.Message{
			ID: uuid.NewString(), From: addr, FromName: name, FromSession: id,
			To: r.from, ToName: r.fromName, ToSessionID: r.fromSession, AliasOf: r.from,
			// The answer carries the mode of the message it answers: the
			// remote session's own is not known here, and the receiver
			// already admitted a sender of that class.
			Body: text, Mode: r.mode, Attested: true, HopChain: r.hopChain,
			Protocol: message.ProtocolRemote, Time: now,
		}
		evs = append(evs, message.Event{Type: message.EventMessage, Leg: message.ProtocolRemote, Time: now, Message: m})
	}
	return evs
}
