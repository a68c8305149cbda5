package qwen

import (
	"context"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

var originAuth = map[AuthKind]message.AuthClass{
	AuthPeer: message.AuthPeer, AuthChild: message.AuthChild, AuthController: message.AuthController,
}

func (p *Leg) toMessage(in Inbound) message.Message {
	f := in.Frame
	m := message.Message{
		ID: f.MsgID, From: udsOrNone(f.From), FromName: f.FromName, Body: f.Content, Mode: f.FromMode,
		Attested: f.FromMode != message.ModeUnknown, Auth: originAuth[in.Origin.Kind],
		Protocol: message.ProtocolQwen, Time: p.clk.Now(), ToSessionID: f.ToSessionID, HopChain: f.HopChain,
		SenderPID: in.SenderPID,
	}
	if in.Origin.Kind == AuthController {
		m.Controller = in.Origin.Controller.Label
	}
	if al, ok := p.al.admittedFor(f.ToSessionID); ok {
		m.AliasOf, m.ToName = al.origin.Address, al.origin.Name
		p.al.remember(f.MsgID, replyTo{from: f.From, token: f.ReplyToken, pid: in.SenderPID})
	}
	return m
}

// udsOrNone is the uds: address of an inbox path, or "" for none: a frame
// without a from names no sender, not the address "uds:".
func udsOrNone(path string) string {
	if path == "" {
		return ""
	}
	return addressing.UDS(path)
}

// serveConn authenticates the first non-blank line and then reads frames.
// A connection that closes with nothing is a liveness probe.
func (p *Leg) serveConn(ctx context.Context, c *uds.Conn) {
	var origin Origin
	authed := false
	for {
		line, err := c.ReadLine()
		if err != nil {
			return
		}
		if IsBlank(line) {
			continue
		}
		if !authed {
			o, ok := p.auth.Authenticate(line)
			if !ok {
				p.log.Debug("qwen inbox: connection without an accepted auth line closed", "pid", c.Cred.PID)
				return
			}
			origin, authed = o, true
			c.Mark()
			continue
		}
		l, err := ParseLine(line)
		if err != nil {
			p.log.Debug("qwen inbox: bad line ignored", "err", err)
			continue
		}
		if l.User != nil || l.Status != nil {
			c.Mark() // junk (and a second auth line) does not extend the deadline
		}
		switch {
		case l.User != nil:
			in := Inbound{Frame: *l.User, Origin: origin, SenderPID: c.Cred.PID}
			if d := p.guard.Admit(in); d.Outcome == OutcomeHeld && d.Cause != 0 {
				m := p.toMessage(in)
				p.notice(message.Event{Type: message.EventHeld, Held: &message.Held{
					Message: m, Reason: d.Cause.Sentence(), Since: p.clk.Now(), Expires: p.clk.Now().Add(p.cfg.HeldExpiry)}})
			}
		case l.Status != nil:
			moves := p.ledger.Apply(*l.Status)
			p.mirror.Observe(moves)
			for _, mv := range moves {
				rc := mv.Receipt
				rc.From = udsOrNone(l.Status.From)
				p.emit(ctx, message.Event{Type: message.EventReceipt, Receipt: &rc})
			}
		}
	}
}
