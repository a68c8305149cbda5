package claude

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"path/filepath"
	"strconv"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// inbound is what one connection told us about who is speaking.
type inbound struct {
	auth  message.AuthClass
	cred  uds.Cred
	reply replyTo // verified reply socket, or zero when unvettable
}

// replyTo is a verified reply socket: its path, and the process (pid and
// start time) that had it bound when the message arrived. Like the real CLI
// (expectPeerPid, expectPeerProcStart), every later write to it checks that
// the same process still holds it, so a socket re-bound by another process
// after its sender exited hears nothing about the sender's messages.
type replyTo struct {
	path      string
	pid       int
	procStart string
}

// serveConn reads an optional auth line, then frames until EOF.
func (p *Leg) serveConn(ctx context.Context, c *uds.Conn) {
	in := inbound{auth: message.AuthUnauthenticated, cred: c.Cred}
	first := true
	for {
		line, err := c.ReadLine()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.log.Debug("inbound connection ended", "pid", c.Cred.PID, "err", err)
			}
			return
		}
		l, err := ParseLine(line)
		if err != nil {
			p.log.Debug("bad line from peer ignored", "pid", c.Cred.PID, "err", err)
			continue // and the read deadline stays where it was
		}
		c.Mark()
		if l.Auth != nil {
			if first {
				in.auth = p.classify(l.Auth.Token)
			}
			first = false
			continue
		}
		first = false
		// --require-auth guards what reaches a person: user frames. The
		// real CLI sends receipts and idle notices without an auth line
		// whenever our key file is not in its own sessions directory, so
		// refusing those would turn a hold into a "delivered".
		if in.auth == message.AuthUnauthenticated && p.cfg.RequireAuth && l.Frame.Type == TypeUser {
			// Refused without a receipt: an unauthenticated sender's reply
			// address is not one we trust to write to.
			p.log.Info("unauthenticated message refused (--require-auth)", "pid", c.Cred.PID, "from", l.Frame.From)
			p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: l.Frame.MsgID, From: l.Frame.From, Reason: message.DropUnauthenticated}})
			return
		}
		p.handleFrame(ctx, &in, l.Frame)
	}
}

// classify compares a presented token with ours in constant time. A wrong
// token is unauthenticated, not an error: the real CLI on Linux delivers it.
func (p *Leg) classify(tok string) message.AuthClass {
	switch {
	case subtle.ConstantTimeCompare([]byte(tok), []byte(p.peerToken)) == 1:
		return message.AuthPeer
	case subtle.ConstantTimeCompare([]byte(tok), []byte(p.childToken)) == 1:
		return message.AuthChild
	}
	return message.AuthUnauthenticated
}

func (p *Leg) handleFrame(ctx context.Context, in *inbound, f *Frame) {
	if f == nil {
		return
	}
	switch f.Type {
	case TypeUser:
		p.handleUser(ctx, in, f)
	case TypeControl:
		p.handleControl(ctx, in, f)
	default:
		// The real CLI drops other types silently; so do we.
		p.log.Debug("frame of another type ignored", "type", f.Type)
	}
}

// verifyReply returns the sender's reply socket when it is one the real CLI
// would answer: a uds: address (percent-decoded) in an allowed place with an
// allowed name, bound by the very process that connected. Otherwise the zero
// replyTo, and receipts are not sent.
func (p *Leg) verifyReply(from string, pid int) replyTo {
	path, ok := addressing.SocketOf(from)
	if !ok || pid <= 0 {
		return replyTo{}
	}
	if !replyPathOK(path, filepath.Dir(p.socketPath), ReplyDirs(p.uid, p.cfg.RuntimeDir, p.cfg.TmpDir)) {
		return replyTo{}
	}
	owned, err := socketOwnedBy(path, pid)
	if err != nil || !owned {
		p.log.Debug("unvettable reply target", "from", from, "pid", pid, "err", err)
		return replyTo{}
	}
	ticks, ok := uds.LiveStart(pid)
	if !ok {
		var err error
		if ticks, err = uds.StartTicks(pid); err != nil {
			p.log.Debug("unvettable reply target: no start time", "from", from, "pid", pid, "err", err)
			return replyTo{}
		}
	}
	return replyTo{path: path, pid: pid, procStart: strconv.FormatUint(ticks, 10)}
}

// stillOwned reports whether r's socket is still bound by the process that
// had it when the message arrived: same pid, same start time.
func (p *Leg) stillOwned(r replyTo) bool {
	if !procStartMatches(r.pid, r.procStart) {
		return false
	}
	owned, err := socketOwnedBy(r.path, r.pid)
	return err == nil && owned
}

func (p *Leg) handleUser(ctx context.Context, in *inbound, f *Frame) {
	if f.SessionID != "" && f.SessionID != p.sessionID {
		p.log.Debug("frame for another session ignored", "session_id", f.SessionID)
		return
	}
	if f.Message == nil {
		p.log.Debug("user frame without a message ignored")
		return
	}
	if in.reply.path == "" {
		in.reply = p.verifyReply(f.From, in.cred.PID)
	}
	p.replies.remember(f.MsgID, in.reply)
	c := ParseContent(f.Message.Content)
	m := message.Message{
		ID: f.MsgID, From: f.From, Body: c.Raw, Auth: in.auth, Attested: c.Attested,
		Protocol: message.ProtocolClaude, Time: p.clock.Now(), Plugin: f.FromPlugin,
		Attachments: f.FileAttachments, SenderPID: in.cred.PID,
	}
	if c.Attested {
		e := c.Envelope
		m.Body, m.FromName, m.FromSession, m.HopChain, m.Plugin = e.Body, e.FromName, e.FromSession, e.HopChain, e.FromPlugin
		m.Mode, _ = message.ParseMode(e.FromMode)
		if e.From != "" && m.From == "" {
			m.From = e.From
		}
	}
	// Guard keys are prefixed like the real CLI's, so a sender claiming
	// from="pid:123" cannot share that process's bucket.
	sender := "from:" + f.From
	if f.From == "" {
		sender = "pid:" + strconv.Itoa(in.cred.PID)
	}
	if reason, dropped := p.guard.Admit(sender, m.Body, m.HopChain, p.queued()); dropped {
		p.dropInbound(ctx, sender, in.reply, m, reason)
		return
	}
	v := p.decide(in, m)
	if len(m.Attachments) > 0 && v != verdictRefuse { // a refused message's files are never read
		m.Attachments = p.acceptAttachments(m)
	}
	switch v {
	case verdictDeliver:
		if !p.emitter.Emit(ctx, message.Event{Type: message.EventMessage, Message: &m}) {
			// Stopped before the router took it: silence would read as
			// delivered, so the sender hears expired, as for a hold.
			p.unhanded(ctx, in.reply, m.ID)
		}
	case verdictRefuse:
		p.log.Info("inbound message refused by policy", "from", sender, "msg_id", f.MsgID)
		p.receipt(ctx, in.reply, NewStatusReceipt(p.addr, f.MsgID, WireExpired, DetailRefused,
			"This session refuses inbound cross-session messages"))
		p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: f.MsgID, From: m.From, Reason: message.DropRefused}})
	case verdictHold:
		if !p.hold(ctx, in.reply, m, p.holdReason(m)) {
			p.dropInbound(ctx, sender, in.reply, m, message.DropQueueFull)
		}
	}
}

// dropInbound turns m away for reason: a dropped receipt to a vetted
// sender, as Claude Code writes one, and a drop event.
func (p *Leg) dropInbound(ctx context.Context, sender string, reply replyTo, m message.Message, reason message.DropReason) {
	p.log.Info("inbound message dropped", "from", sender, "reason", reason.String(), "msg_id", m.ID)
	p.drops.report(ctx, sender, reply, m.ID, reason)
	p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: m.ID, From: m.From, Reason: reason}})
}

// unhanded tells the sender of msgID that its message was accepted but
// never handed on (the session stopped, or the router did not take it):
// expired. Sent even when ctx has ended, which is the usual cause.
func (p *Leg) unhanded(ctx context.Context, reply replyTo, msgID string) {
	p.log.Info("inbound message not handed on: expired", "msg_id", msgID)
	p.receipt(context.WithoutCancel(ctx), reply, NewStatusReceipt(p.addr, msgID, WireExpired, "", "The session stopped before taking the message"))
}
