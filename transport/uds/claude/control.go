package claude

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
)

type idleSub struct {
	msgID string
	reply string
	added time.Time
}

func (p *Peer) handleControl(ctx context.Context, in *inbound, f *Frame) {
	switch f.Action {
	case ActionPeerMessageStatus:
		rc, ok := ReceiptOf(f)
		if !ok {
			p.log.Debug("receipt with an unknown status ignored", "status", f.Status)
			return
		}
		rc.Time = p.clock.Now()
		p.emit(ctx, message.Event{Type: message.EventReceipt, Receipt: &rc})
	case ActionNotifyWhenIdle:
		if in.reply == "" {
			in.reply = p.verifyReply(f.From, in.cred.PID)
		}
		if in.reply == "" || f.MsgID == "" {
			p.log.Debug("idle subscription from an unvettable address ignored", "from", f.From)
			return
		}
		s := idleSub{msgID: f.MsgID, reply: in.reply, added: p.clock.Now()}
		p.addIdleSub(s)
		// The gateway runs no turns: it is idle now.
		p.sendIdleNotice(ctx, s, "idle")
	case ActionPeerIdleNotice:
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

func (p *Peer) addIdleSub(s idleSub) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
}

func (p *Peer) sendIdleNotice(ctx context.Context, s idleSub, state string) {
	p.receipt(ctx, s.reply, NewIdleNotice(p.addr, s.msgID, state, p.startedAt.UnixMilli(), "", p.cfg.Mode.String()))
}

// NotifyWhenIdle asks target to tell us when it is idle; the notice comes
// back as an idle event whose subscription id is the returned id.
func (p *Peer) NotifyWhenIdle(ctx context.Context, target message.Session) (string, error) {
	path, err := socketOf(target.Address)
	if err != nil {
		return "", err
	}
	id := uuid.NewString()
	f := NewNotifyWhenIdle(p.addr, id, p.cfg.Mode.String())
	if err := p.write(ctx, path, target.PID, f); err != nil {
		return "", err
	}
	return id, nil
}
