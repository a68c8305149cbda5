package qwen

import (
	"container/list"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// The sender's side of receipts. A message we wrote and have heard nothing
// about is pending, message.StatusSent in the model. Receipts arrive in no
// particular order, on connections of their own, and are applied as
// transitions: anything the table below does not allow is a repeat, or an
// answer to a later frame that reused the id, and is ignored.
//
//	pending   → held | delivered | denied | refused | expired | misaddressed | dropped
//	held      → delivered | denied | expired | misaddressed
//	delivered → expired | misaddressed
//
// This differs from message.CanMove in one place, and the Qwen leg must use
// this table, not message.Tracker: held → refused is not allowed here (a
// refusal is decided at admission, before anything is held). Like
// message.CanMove it allows held → misaddressed (a hold released after the
// session was swapped), delivered → expired (queued but never consumed when
// the session exited) and delivered → misaddressed (queued across a session
// swap).
var transitions = map[message.Status][]message.Status{
	message.StatusSent: {message.StatusHeld, message.StatusDelivered, message.StatusDenied,
		message.StatusRefused, message.StatusExpired, message.StatusMisaddressed, message.StatusDropped},
	message.StatusHeld:      {message.StatusDelivered, message.StatusDenied, message.StatusExpired, message.StatusMisaddressed},
	message.StatusDelivered: {message.StatusExpired, message.StatusMisaddressed},
}

// CanMove reports whether a receipt may move a sent message from one status
// to another under Qwen Code's table.
func CanMove(from, to message.Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// modelStatus maps each wire status to the model's. Every one has an
// equivalent.
var modelStatus = [...]message.Status{
	StatusHeld: message.StatusHeld, StatusDelivered: message.StatusDelivered,
	StatusDenied: message.StatusDenied, StatusRefused: message.StatusRefused,
	StatusExpired: message.StatusExpired, StatusMisaddressed: message.StatusMisaddressed,
	StatusDropped: message.StatusDropped,
}

// Model is the model's status for s; 0 for a status this version does not
// know.
func (s Status) Model() message.Status {
	if int(s) < len(modelStatus) {
		return modelStatus[s]
	}
	return 0
}

// WireStatusOf maps a model status to the wire status a receipt carries; ok
// is false for queued, sent and failed, which no receipt carries.
func WireStatusOf(m message.Status) (s Status, ok bool) {
	for i, ms := range modelStatus {
		if ms == m && i > 0 {
			return Status(i), true
		}
	}
	return 0, false
}

// MaxTrackedSends is how many sent messages the ledger remembers; the
// oldest is forgotten first, and a receipt for it is then noise.
const MaxTrackedSends = 200

// Ledger is the sender's record of messages written and not forgotten,
// keyed by canonical msgId, each with the inbox it went to and its status.
// It is safe for concurrent use.
type Ledger struct {
	clk clock.Clock
	max int

	mu    sync.Mutex
	order *list.List               // of *sent, oldest first
	byID  map[string]*list.Element // by CanonicalMsgID
}

type sent struct {
	key, msgID, target string
	state              message.Status
	sentAt             time.Time
}

// NewLedger returns a ledger remembering MaxTrackedSends messages.
func NewLedger(clk clock.Clock) *Ledger {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Ledger{clk: clk, max: MaxTrackedSends, order: list.New(), byID: map[string]*list.Element{}}
}

// Track records that msgID is about to be written to the inbox at target,
// pending. Tracking an id again starts it afresh as the newest.
func (l *Ledger) Track(msgID, target string) {
	key := CanonicalMsgID(msgID)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.byID[key]; ok {
		l.order.Remove(e)
	}
	l.byID[key] = l.order.PushBack(&sent{key: key, msgID: msgID, target: target, state: message.StatusSent, sentAt: l.clk.Now()})
	for l.order.Len() > l.max {
		old := l.order.Front()
		l.order.Remove(old)
		delete(l.byID, old.Value.(*sent).key)
	}
}

// Forget drops msgID: the write definitely did not happen (no socket, a
// refused connection, a frame too large, a busy listener), so no receipt
// can be about it.
func (l *Ledger) Forget(msgID string) {
	key := CanonicalMsgID(msgID)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.byID[key]; ok {
		l.order.Remove(e)
		delete(l.byID, key)
	}
}

// State returns msgID's status, and whether the ledger knows it.
func (l *Ledger) State(msgID string) (message.Status, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.byID[CanonicalMsgID(msgID)]; ok {
		return e.Value.(*sent).state, true
	}
	return 0, false
}

// Settled is one move a receipt made.
type Settled struct {
	MsgID    string         // the id as we sent it
	Target   string         // the inbox it was written to
	Previous message.Status // the status before
	Age      time.Duration  // since it was tracked
	Receipt  message.Receipt
}

// Apply moves every message f settles (OrigMsgID, and on a dropped receipt
// each of DroppedMsgIDs) that the ledger knows and the table lets it move,
// and returns the moves in that order. Ids it never sent, and moves the
// table does not allow, are ignored: nil means the receipt was noise or a
// repeat. The receipt's reason is flattened to one line.
func (l *Ledger) Apply(f StatusFrame) []Settled {
	to := f.Status.Model()
	if to == 0 {
		return nil
	}
	now := l.clk.Now()
	var out []Settled
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range f.Settles() {
		e, ok := l.byID[CanonicalMsgID(id)]
		if !ok {
			continue
		}
		s := e.Value.(*sent)
		if !CanMove(s.state, to) {
			continue
		}
		r := message.Receipt{MsgID: s.msgID, Status: to, Reason: FlattenLabel(f.Reason), From: f.From, Time: now}
		if f.Status == StatusDropped && f.DropReason != 0 {
			r.DropReason = f.DropReason
		}
		out = append(out, Settled{MsgID: s.msgID, Target: s.target, Previous: s.state, Age: now.Sub(s.sentAt), Receipt: r})
		s.state = to
	}
	return out
}
