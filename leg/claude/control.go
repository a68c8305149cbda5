package claude

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
)

type idleSub struct {
	msgID string
	reply replyTo
	added time.Time
}

func (p *Leg) handleControl(ctx context.Context, in *inbound, f *Frame) {
	switch f.Action {
	case ActionPeerMessageStatus:
		rc, ok := ReceiptOf(f)
		if !ok {
			p.log.Debug("receipt with an unknown status ignored", "status", f.Status)
			return
		}
		rc.Time = p.clock.Now()
		// A coalesced drop receipt speaks for orig_msg_id and every id it
		// lists, as the real CLI reads it; each must be a message we sent
		// to the receipt's sender.
		ids := []string{f.OrigMsgID}
		if rc.Status == message.StatusDropped {
			for _, id := range f.DroppedMsgIDs {
				if len(ids) > dropBatchMax {
					break // the real CLI lists at most 256; more is not a receipt we owe belief
				}
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
		}
		for _, id := range ids {
			if !p.sent.from(id, f.From) {
				p.log.Info("receipt ignored: not from the socket that message went to", "orig_msg_id", id, "from", f.From, "status", f.Status)
				continue
			}
			r := rc
			r.MsgID = id
			p.emit(ctx, message.Event{Type: message.EventReceipt, Receipt: &r})
		}
	case ActionNotifyWhenIdle:
		if in.reply.path == "" {
			in.reply = p.verifyReply(f.From, in.cred.PID)
		}
		if in.reply.path == "" || f.MsgID == "" {
			p.log.Debug("idle subscription from an unvettable address ignored", "from", f.From)
			return
		}
		s := idleSub{msgID: f.MsgID, reply: in.reply, added: p.clock.Now()}
		// The gateway runs no turns, so it is idle now, unless a hold is
		// pending: like the real CLI, the notice then waits until the last
		// hold is decided, or becomes exited at shutdown.
		if p.addIdleSub(s) {
			p.sendIdleNotice(ctx, s, IdleStateIdle)
		}
	case ActionPeerIdleNotice:
		// Like the real CLI, only a notice we asked for, from the socket we
		// asked, and once: anyone may write one, and each would reach a
		// person (and fill the router's queue, which the guard reads).
		if !p.idleAsked.from(f.OrigMsgID, f.From) {
			p.unsolicited(f)
			return
		}
		p.idleAsked.forget(f.OrigMsgID)
		n := message.IdleNotice{Peer: f.From, State: f.State, Detail: f.Detail, SubID: f.OrigMsgID}
		if f.FinishedAt > 0 {
			n.FinishedAt = time.UnixMilli(f.FinishedAt).UTC()
		}
		p.emit(ctx, message.Event{Type: message.EventIdle, Idle: &n})
	default:
		// rename and the artifact_yield family concern conversations the
		// gateway does not have.
		p.log.Debug("control action ignored", "action", f.Action)
	}
}

// addIdleSub answers now (true) when no hold is pending; otherwise it keeps
// s until the holds are decided. Each subscription gets one notice.
func (p *Leg) addIdleSub(s idleSub) (answerNow bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.held) == 0 && !p.closed {
		return true
	}
	if len(p.idleSubs) >= maxIdleSubs {
		var oldest string
		for id, o := range p.idleSubs {
			if oldest == "" || o.added.Before(p.idleSubs[oldest].added) {
				oldest = id
			}
		}
		delete(p.idleSubs, oldest)
	}
	p.idleSubs[s.msgID] = s
	return false
}

// idleAgain answers the subscriptions that waited for the holds, once the
// last one is decided.
func (p *Leg) idleAgain(ctx context.Context) {
	p.mu.Lock()
	if len(p.held) > 0 || p.closed || len(p.idleSubs) == 0 {
		p.mu.Unlock()
		return
	}
	subs := make([]idleSub, 0, len(p.idleSubs))
	for _, s := range p.idleSubs {
		subs = append(subs, s)
	}
	clear(p.idleSubs)
	p.mu.Unlock()
	for _, s := range subs {
		p.sendIdleNotice(ctx, s, IdleStateIdle)
	}
}

func (p *Leg) sendIdleNotice(ctx context.Context, s idleSub, state string) {
	p.receipt(ctx, s.reply, NewIdleNotice(p.addr, s.msgID, state, p.startedAt.UnixMilli(), "", p.cfg.Mode.String()))
}

// NotifyWhenIdle asks target to tell us when it is idle; the notice comes
// back as an idle event whose subscription id is the returned id.
func (p *Leg) NotifyWhenIdle(ctx context.Context, target message.Session) (string, error) {
	path, err := socketOf(target.Address)
	if err != nil {
		return "", err
	}
	id := uuid.NewString()
	f := NewNotifyWhenIdle(p.addr, id, p.cfg.Mode.String())
	p.idleAsked.add(id, path) // before the write: the answer may beat its return
	if err := p.write(ctx, path, target.PID, f); err != nil {
		p.idleAsked.forget(id)
		return "", err
	}
	return id, nil
}

// unsolicited drops an idle notice we did not ask for (or had its one
// notice already). Each is a drop with reason unsolicited; a drop event
// goes to the router at most once a second (with the count since), so a
// flood of them cannot fill its queue either.
func (p *Leg) unsolicited(f *Frame) {
	n := p.unsolicitedN.Add(1)
	now := p.clock.Now().UnixNano()
	last := p.unsolicitedAt.Load()
	if now-last < int64(time.Second) || !p.unsolicitedAt.CompareAndSwap(last, now) {
		return
	}
	p.unsolicitedN.Add(-n)
	p.log.Info("idle notices nobody asked for dropped", "count", n, "from", f.From, "orig_msg_id", f.OrigMsgID)
	p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: f.OrigMsgID, From: f.From, Reason: message.DropUnsolicited}})
}
