package claude

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/message"
)

// The Claude leg's side of the bridge: sessions of other legs appear here as
// alias workers (alias.go), one process per name.

// replyBook remembers, per inbound message, the verified reply socket and
// whether a held receipt went there, so a bridged outcome can be told to
// the sender in Claude Code's vocabulary.
type replyBook struct {
	m *bounded.Map[string, replyState]
}

type replyState struct {
	reply replyTo
	held  bool
}

const maxReplyBook = 4096

func newReplyBook() replyBook {
	return replyBook{m: bounded.NewMap[string, replyState](maxReplyBook)}
}

func (b replyBook) remember(msgID string, reply replyTo) {
	if msgID != "" && reply.path != "" {
		b.m.Put(msgID, replyState{reply: reply})
	}
}

// receiptFor maps a bridged outcome to the receipt Claude Code would send,
// or ok false when it sends none (a clean delivery).
func receiptFor(from, msgID string, rc message.Receipt, wasHeld bool) (Frame, bool) {
	switch rc.Status {
	case message.StatusHeld:
		return NewStatusReceipt(from, msgID, WireHeld, "", rc.Reason), true
	case message.StatusDelivered:
		if !wasHeld {
			return Frame{}, false
		}
		return NewStatusReceipt(from, msgID, WireDelivered, "", ""), true
	case message.StatusDenied:
		return NewStatusReceipt(from, msgID, WireDenied, "", rc.Reason), true
	case message.StatusExpired:
		return NewStatusReceipt(from, msgID, WireExpired, "", rc.Reason), true
	case message.StatusRefused:
		return NewStatusReceipt(from, msgID, WireExpired, DetailRefused, rc.Reason), true
	case message.StatusMisaddressed:
		return NewStatusReceipt(from, msgID, WireExpired, "misaddressed", rc.Reason), true
	case message.StatusFailed:
		return NewStatusReceipt(from, msgID, WireExpired, "failed", rc.Reason), true
	case message.StatusDropped:
		if r := rc.DropReason; r.Admission() {
			return NewDropReceipt(from, msgID, r), true
		}
		return NewStatusReceipt(from, msgID, WireDropped, "", rc.Reason), true
	}
	return Frame{}, false
}

// relay sends the receipt for a bridged outcome to the sender of msgID.
func (p *Peer) relay(ctx context.Context, msgID string, rc message.Receipt) {
	var st replyState
	var f Frame
	send := false
	// Read and mark held under the book's lock: two outcomes of one message
	// may be relayed at once.
	p.replies.m.Update(msgID, func(s replyState) replyState {
		st = s
		f, send = receiptFor(p.addr, msgID, rc, s.held)
		if send && rc.Status == message.StatusHeld {
			s.held = true
		}
		return s
	})
	if send {
		p.receipt(ctx, st.reply, f)
	}
}

// OpRelay asks a worker to tell a sender about a bridged message.
const OpRelay = "relay"

// bridgeHost is the Claude leg's alias bookkeeping: which alias name stands
// for which session of another leg, and which were refused at the cap.
type bridgeHost struct {
	pool *AliasPool
	mu   sync.Mutex
	byNm map[string]message.Session
	// senders are the sessions on-demand aliases (started by SendAs for a
	// sender no sync has listed yet, or ever will) stand for: an answer to
	// such an alias before the next sync must still reach its session.
	senders map[string]message.Session
	refused map[string]bool // listed sessions the last sync found no room for
}

// EnableAliases makes the peer an alias host with pool, whose Events must
// be routed to OnAliasEvent.
func (p *Peer) EnableAliases(pool *AliasPool) {
	p.bridge = &bridgeHost{pool: pool, byNm: map[string]message.Session{}, senders: map[string]message.Session{}, refused: map[string]bool{}}
}

// OnAliasEvent hands on what arrived at alias name: a message is marked as
// being for the session the alias stands for.
func (p *Peer) OnAliasEvent(name string, ev message.Event) {
	if ev.Message != nil && p.bridge != nil {
		p.bridge.mu.Lock()
		origin, ok := p.bridge.byNm[name]
		if !ok {
			origin, ok = p.bridge.senders[name]
		}
		p.bridge.mu.Unlock()
		if ok {
			m := *ev.Message
			m.AliasOf, m.ToName = origin.Address, name
			ev.Message = &m
		}
	}
	p.emit(context.Background(), ev)
}

// SyncAliases starts an alias worker for each session of another leg, up
// to the pool's cap, and retires those whose session is gone. A session
// refused at the cap is logged and counted (a drop, reason alias-limit)
// once, when it is first refused, not at every sync; it is not an error.
func (p *Peer) SyncAliases(ctx context.Context, others []message.Session) error {
	if p.bridge == nil {
		return nil
	}
	keep := map[string]bool{}
	byNm := map[string]message.Session{}
	for _, s := range others {
		// A name the registry would refuse (another host's NAME.HOST can
		// pass its 64 characters) gets no alias: its worker could never
		// register, and would be started again at every sync.
		if s.Name == "" || s.Name == p.cfg.Name || validName(s.Name) != nil {
			continue
		}
		keep[s.Name] = true
		byNm[s.Name] = s
	}
	p.bridge.mu.Lock()
	p.bridge.byNm = byNm
	p.bridge.mu.Unlock()
	refused, err := p.bridge.pool.Publish(ctx, keep)
	now := make(map[string]bool, len(refused))
	p.bridge.mu.Lock()
	for name := range p.bridge.senders {
		if !p.bridge.pool.has(name) { // its worker went idle and stopped (pool.mu is taken under mu, never the reverse)
			delete(p.bridge.senders, name)
		}
	}
	was := p.bridge.refused
	p.bridge.refused = now
	p.bridge.mu.Unlock()
	for _, name := range refused {
		now[name] = true
		if !was[name] {
			p.refuseAlias(ctx, name, byNm[name].Address, "")
		}
	}
	return err
}

// refuseAlias logs and counts an alias refused at the cap: the alias of a
// listed session (msgID empty), or the one a bridged message needed.
func (p *Peer) refuseAlias(ctx context.Context, name, from, msgID string) {
	p.log.Warn("alias refused: the alias worker cap is reached", "alias", name, "for", from,
		"msg_id", msgID, "max_alias_workers", p.bridge.pool.cfg.MaxWorkers)
	p.emit(ctx, message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: msgID, From: from, Reason: message.DropAliasLimit}})
}

// SendAs sends m from the alias named after sender. When the cap leaves no
// room for that alias, the error is a *LimitError, which the router turns
// into a dropped receipt (reason alias-limit) for the sender.
func (p *Peer) SendAs(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error) {
	if p.bridge == nil {
		return p.Send(ctx, m)
	}
	m.FromName = sender.Name
	// Known before the write: the receiver may answer before Send returns.
	p.bridge.mu.Lock()
	p.bridge.senders[sender.Name] = sender
	p.bridge.mu.Unlock()
	if err := p.bridge.pool.Send(ctx, sender.Name, m); err != nil {
		if errors.Is(err, ErrAliasLimit) {
			p.bridge.mu.Lock()
			delete(p.bridge.senders, sender.Name)
			p.bridge.mu.Unlock()
			p.refuseAlias(ctx, sender.Name, sender.Address, m.ID)
		}
		return message.Receipt{}, err
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Time: p.clock.Now()}, nil
}

// Relay tells the Claude sender of in (which came to alias in.ToName) what
// became of it, through that alias's worker.
func (p *Peer) Relay(ctx context.Context, in message.Message, rc message.Receipt) {
	if p.bridge == nil {
		p.relay(ctx, in.ID, rc)
		return
	}
	rc.MsgID = in.ID
	_ = p.bridge.pool.relay(in.ToName, rc)
}

// relay asks the worker of alias name to send a receipt about rc.MsgID.
func (ap *AliasPool) relay(name string, rc message.Receipt) error {
	ap.mu.Lock()
	w := ap.workers[name]
	ap.mu.Unlock()
	if w == nil || w.ctl == nil {
		return ErrPoolClosed
	}
	b, err := json.Marshal(WorkerOp{Op: OpRelay, Receipt: &rc})
	if err != nil {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_, err = w.ctl.Write(append(b, '\n'))
	return err
}

// Aliases lists the published aliases that are up, each with the address
// of the session it stands for.
func (p *Peer) Aliases() []message.Session {
	if p.bridge == nil {
		return nil
	}
	p.bridge.mu.Lock()
	byNm := p.bridge.byNm
	p.bridge.mu.Unlock()
	var out []message.Session
	for _, a := range p.bridge.pool.Aliases() {
		origin, ok := byNm[a.Name]
		if !ok {
			continue // started on demand for a sender, not published
		}
		out = append(out, message.Session{
			Address: a.Address, Protocol: message.ProtocolClaude, Name: a.Name, Ref: addressing.Ref(a.SessionID),
			SessionID: a.SessionID, PID: a.PID, Kind: KindAlias, Reachable: true, AliasOf: origin.Address,
		})
	}
	return out
}
