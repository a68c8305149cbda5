package claude

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
func (p *Leg) relay(ctx context.Context, msgID string, rc message.Receipt) {
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
	// starting counts the SendAs calls starting the worker of a sender's
	// alias: a sync meanwhile keeps that name for the sender.
	starting map[string]int
	refused  map[string]bool // listed sessions the last sync found no room for
	// retired are the published names a sync dropped (the session left, or
	// its name became shared and its alias is NAME-REF now), while their
	// worker still runs: what it accepted before it stops was sent to the
	// session the name stood for then.
	retired map[string]message.Session
}

// aliasRef is the ref a session's alias name carries when its name is not
// its own: the session's ref as its CLI lists it.
func aliasRef(s message.Session) string {
	switch {
	case s.Ref != "":
		return s.Ref
	case s.SessionID != "":
		return addressing.Ref(s.SessionID)
	}
	return addressing.Ref(s.Address)
}

// sameOrigin reports whether a and b are one session: sessions of one
// process may share an address, so the session id tells them apart.
func sameOrigin(a, b message.Session) bool {
	return a.Address == b.Address && a.SessionID == b.SessionID
}

// aliasNames names the alias of each of others: its own name when no
// other session has it (listed, or held by an on-demand alias of another
// session), else NAME-REF, so that no name stands for two sessions. A
// name that is still not unique, or that the registry would refuse, gets
// no alias: guessing would hand one session's messages to another.
func aliasNames(others []message.Session, held map[string]message.Session) map[string]message.Session {
	count := map[string]int{}
	for _, s := range others {
		count[s.Name]++
	}
	for name, s := range held {
		if !slices.ContainsFunc(others, func(o message.Session) bool { return sameOrigin(o, s) }) {
			count[name]++
		}
	}
	named := map[string][]message.Session{}
	for _, s := range others {
		name := s.Name
		if count[name] > 1 {
			name += "-" + aliasRef(s)
		}
		named[name] = append(named[name], s)
	}
	out := map[string]message.Session{}
	for name, ss := range named {
		if len(ss) == 1 && validName(name) == nil && (count[name] == 0 || name == ss[0].Name) {
			out[name] = ss[0]
		}
	}
	return out
}

// senderName is the alias name SendAs uses for s: the one the last sync
// published for it, else its own name unless that stands for another
// session, else NAME-REF. The caller holds mu.
func (b *bridgeHost) senderName(s message.Session) string {
	for name, o := range b.byNm {
		if sameOrigin(o, s) {
			return name
		}
	}
	taken := func(name string) bool {
		o, ok := b.byNm[name]
		if !ok {
			o, ok = b.senders[name]
		}
		return ok && !sameOrigin(o, s)
	}
	if !taken(s.Name) {
		return s.Name
	}
	return s.Name + "-" + aliasRef(s)
}

// EnableAliases makes the leg an alias host with pool, whose Events must
// be routed to OnAliasEvent.
func (p *Leg) EnableAliases(pool *AliasPool) {
	p.bridge = &bridgeHost{pool: pool, byNm: map[string]message.Session{}, senders: map[string]message.Session{},
		starting: map[string]int{}, refused: map[string]bool{}, retired: map[string]message.Session{}}
}

// OnAliasEvent hands on what arrived at alias name: a message is marked as
// being for the session the alias stands for (or stood for, as its worker
// stops), or, when it stands for none, refused: handed on unmarked it would
// be a message to the gateway itself.
func (p *Leg) OnAliasEvent(name string, ev message.Event) {
	if ev.Message != nil && p.bridge != nil {
		origin, ok := p.bridge.origin(name)
		if !ok {
			p.refuseUnaliased(name, ev.Message)
			return
		}
		// ToName is the alias (Relay answers through it); the session id
		// pins the session when its name is not the alias's.
		m := *ev.Message
		m.AliasOf, m.ToName, m.ToSessionID = origin.Address, name, origin.SessionID
		ev.Message = &m
	}
	if ev.Type == message.EventDrop || ev.Type == message.EventHeld {
		// A notice is offered, never waited for: this is the worker's
		// pipe reader, and a router behind would stall the worker's
		// senders with it.
		p.notice(ev)
		return
	}
	p.emit(context.Background(), ev)
}

// origin is the session alias name stands for: the one the last sync
// published it for, else the sender it was started for, else the one it
// stood for until a sync retired it.
func (b *bridgeHost) origin(name string) (message.Session, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.byNm[name]; ok {
		return s, true
	}
	if s, ok := b.senders[name]; ok {
		return s, true
	}
	s, ok := b.retired[name]
	return s, ok
}

// refuseUnaliased tells the sender of m, through alias name's worker, that
// the alias stands for no session: guessing one could hand m to another.
func (p *Leg) refuseUnaliased(name string, m *message.Message) {
	p.log.Warn("message to an alias that stands for no session refused", "alias", name, "msg_id", m.ID, "from", m.From)
	_ = p.bridge.pool.relay(name, message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Time: p.clock.Now(),
		Reason: fmt.Sprintf("alias %q stands for no session now: list the sessions and send to its current name", name)})
}

// SyncAliases starts an alias worker for each session of another leg, up
// to the pool's cap, and retires those whose session is gone. A session
// refused at the cap is logged and counted (a drop, reason alias-limit)
// once, when it is first refused, not at every sync; it is not an error.
func (p *Leg) SyncAliases(ctx context.Context, others []message.Session) error {
	if p.bridge == nil {
		return nil
	}
	var listed []message.Session
	for _, s := range others {
		// A name the registry would refuse (another host's NAME.HOST can
		// pass its 64 characters) gets no alias: its worker could never
		// register, and would be started again at every sync.
		if s.Name != "" && s.Name != p.cfg.Name && validName(s.Name) == nil {
			listed = append(listed, s)
		}
	}
	p.bridge.mu.Lock()
	byNm := aliasNames(listed, p.bridge.senders)
	for name, s := range p.bridge.byNm {
		if _, ok := byNm[name]; !ok {
			p.bridge.retired[name] = s
		}
	}
	for name := range byNm {
		delete(p.bridge.retired, name)
	}
	p.bridge.byNm = byNm
	p.bridge.mu.Unlock()
	keep := make(map[string]bool, len(byNm))
	for name := range byNm {
		keep[name] = true
	}
	refused, err := p.bridge.pool.Publish(ctx, keep)
	now := make(map[string]bool, len(refused))
	p.bridge.mu.Lock()
	for name := range p.bridge.senders {
		// Its worker went idle and stopped, and no SendAs is starting it
		// (pool.mu is taken under mu, never the reverse).
		if p.bridge.starting[name] == 0 && !p.bridge.pool.has(name) {
			delete(p.bridge.senders, name)
		}
	}
	for name := range p.bridge.retired {
		if !p.bridge.pool.has(name) { // its worker stopped: nothing more comes from it
			delete(p.bridge.retired, name)
		}
	}
	was := p.bridge.refused
	p.bridge.refused = now
	p.bridge.mu.Unlock()
	for _, name := range refused {
		now[name] = true
		if !was[name] {
			p.refuseAlias(name, byNm[name].Address, "")
		}
	}
	return err
}

// refuseAlias logs and counts an alias refused at the cap: the alias of a
// listed session (msgID empty), or the one a bridged message needed.
func (p *Leg) refuseAlias(name, from, msgID string) {
	p.log.Warn("alias refused: the alias worker cap is reached", "alias", name, "for", from,
		"msg_id", msgID, "max_alias_workers", p.bridge.pool.cfg.MaxWorkers)
	p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: msgID, From: from, Reason: message.DropAliasLimit}})
}

// SendAs sends m from the alias named after sender. When the cap leaves no
// room for that alias, the error is a *LimitError, which the router turns
// into a dropped receipt (reason alias-limit) for the sender.
func (p *Leg) SendAs(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error) {
	if p.bridge == nil {
		return p.Send(ctx, m)
	}
	b := p.bridge
	// Known before the worker starts and the write: a sync meanwhile must
	// neither give the name to another session nor forget it (its worker is
	// not yet in the pool), and the receiver may answer before Send returns.
	b.mu.Lock()
	name := b.senderName(sender)
	b.senders[name] = sender
	b.starting[name]++
	b.mu.Unlock()
	_, err := b.pool.Get(ctx, name)
	b.mu.Lock()
	if b.starting[name]--; b.starting[name] == 0 {
		delete(b.starting, name)
	}
	if err != nil && b.starting[name] == 0 && !b.pool.has(name) && sameOrigin(b.senders[name], sender) {
		delete(b.senders, name)
	}
	b.mu.Unlock()
	if err == nil {
		m.FromName = name
		err = b.pool.Send(ctx, name, m)
	}
	if err != nil {
		if errors.Is(err, ErrAliasLimit) {
			p.refuseAlias(name, sender.Address, m.ID)
		}
		return message.Receipt{}, err
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Time: p.clock.Now()}, nil
}

// Relay tells the Claude sender of in (which came to alias in.ToName) what
// became of it, through that alias's worker.
func (p *Leg) Relay(ctx context.Context, in message.Message, rc message.Receipt) {
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
	b, err := encodeOp(WorkerOp{Op: OpRelay, Receipt: &rc})
	if err != nil {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	_, err = w.ctl.Write(b)
	return err
}

// Aliases lists the published aliases that are up, each with the address
// of the session it stands for.
func (p *Leg) Aliases() []message.Session {
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
