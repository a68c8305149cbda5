package claude

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

type heldMsg struct {
	h     message.Held
	reply replyTo
	timer clock.Stopper
}

// errNotHanded is why a released message was not handed on when the
// caller's context still stood: the session stopped.
var errNotHanded = errors.New("the session stopped")

// ErrNotHeld means no held message has that id.
var ErrNotHeld = errors.New("no held message with that id")

// hold parks m for a person, tells the sender (held), and expires it after
// HoldTTL (expired). It returns false, and parks nothing, when MaxHeld
// messages are held already or their bodies and m's would pass
// MaxHeldBytes: the caller drops m queue-full, as the Qwen leg does,
// rather than evict a message a person may be reading.
func (p *Leg) hold(ctx context.Context, reply replyTo, m message.Message, reason string) bool {
	now := p.clock.Now()
	hm := &heldMsg{h: message.Held{Message: m, Reason: reason, Since: now, Expires: now.Add(p.cfg.HoldTTL)}, reply: reply}
	lim := p.guard.Limits()
	p.mu.Lock()
	if _, dup := p.held[m.ID]; dup || m.ID == "" {
		p.mu.Unlock()
		p.log.Info("held message with a repeated or empty id ignored", "msg_id", m.ID)
		return true
	}
	if len(p.held) >= lim.MaxHeld || heldBytes(p.held)+len(m.Body) > lim.MaxHeldBytes {
		p.mu.Unlock()
		return false
	}
	p.held[m.ID] = hm
	hm.timer = p.clock.AfterFunc(p.cfg.HoldTTL, func() { p.expire(m.ID) })
	p.mu.Unlock()
	p.log.Info("inbound message held", "from", m.From, "msg_id", m.ID, "reason", reason)
	p.receipt(ctx, reply, NewStatusReceipt(p.addr, m.ID, WireHeld, "", reason))
	h := hm.h
	p.notice(message.Event{Type: message.EventHeld, Held: &h})
	return true
}

// heldBytes is what the held bodies weigh against MaxHeldBytes.
func heldBytes(held map[string]*heldMsg) int {
	n := 0
	for _, h := range held {
		n += len(h.h.Message.Body)
	}
	return n
}

// Held lists held messages, oldest first: at most MaxHeld, their bodies at
// most MaxHeldBytes together.
func (p *Leg) Held() []message.Held {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]message.Held, 0, len(p.held))
	for _, h := range p.held {
		out = append(out, h.h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

func (p *Leg) take(id string) (*heldMsg, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hm, ok := p.held[id]
	if ok {
		delete(p.held, id)
		if hm.timer != nil {
			hm.timer.Stop()
		}
	}
	return hm, ok
}

// Decide releases (delivered) or denies (denied) a held message.
func (p *Leg) Decide(ctx context.Context, id string, release bool, reason string) error {
	hm, ok := p.take(id)
	if !ok {
		return ErrNotHeld
	}
	if release {
		// Handed on first: "delivered" only once it is.
		m := hm.h.Message
		if !p.emitter.Emit(ctx, message.Event{Type: message.EventMessage, Message: &m}) {
			p.unhanded(ctx, hm.reply, id)
			p.idleAgain(context.WithoutCancel(ctx))
			return fmt.Errorf("held message %s released but not handed on (expired): %w", id, cmp.Or(ctx.Err(), errNotHanded))
		}
		p.receipt(ctx, hm.reply, NewStatusReceipt(p.addr, id, WireDelivered, "", "Released by the gateway's operator"))
		p.idleAgain(ctx)
		return nil
	}
	if reason == "" {
		reason = "Denied by the gateway's operator"
	}
	p.receipt(ctx, hm.reply, NewStatusReceipt(p.addr, id, WireDenied, "", reason))
	p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: id, From: hm.h.Message.From, Reason: message.DropDenied}})
	p.idleAgain(ctx)
	return nil
}

func (p *Leg) expire(id string) {
	hm, ok := p.take(id)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), receiptTimeout)
	defer cancel()
	p.receipt(ctx, hm.reply, NewStatusReceipt(p.addr, id, WireExpired, "", "The hold was not decided in time"))
	p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: id, From: hm.h.Message.From, Reason: message.DropExpired}})
	p.idleAgain(ctx)
}
