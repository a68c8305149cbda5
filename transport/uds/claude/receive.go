package claude

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/transport/uds"
)

// inbound is what one connection told us about who is speaking.
type inbound struct {
	auth  message.AuthClass
	cred  uds.Cred
	reply string // verified reply socket path, or "" when unvettable
}

// serveConn reads an optional auth line, then frames until EOF.
func (p *Peer) serveConn(ctx context.Context, c *uds.Conn) {
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
			continue
		}
		if l.Auth != nil {
			if first {
				in.auth = p.classify(l.Auth.Token)
			}
			first = false
			continue
		}
		if in.auth == message.AuthUnauthenticated && p.cfg.RequireAuth {
			// Refused without a receipt: an unauthenticated sender's reply
			// address is not one we trust to write to.
			p.log.Info("unauthenticated connection refused (--require-auth)", "pid", c.Cred.PID, "from", l.Frame.From)
			p.emit(ctx, message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: l.Frame.MsgID, From: l.Frame.From, Reason: DropUnauthenticated}})
			return
		}
		first = false
		p.handleFrame(ctx, &in, l.Frame)
	}
}

// DropUnauthenticated is the drop reason of a frame refused by --require-auth.
const DropUnauthenticated = "unauthenticated"

// classify compares a presented token with ours in constant time. A wrong
// token is unauthenticated, not an error: the real CLI on Linux delivers it.
func (p *Peer) classify(tok string) message.AuthClass {
	switch {
	case subtle.ConstantTimeCompare([]byte(tok), []byte(p.peerToken)) == 1:
		return message.AuthPeer
	case subtle.ConstantTimeCompare([]byte(tok), []byte(p.childToken)) == 1:
		return message.AuthChild
	}
	return message.AuthUnauthenticated
}

func (p *Peer) handleFrame(ctx context.Context, in *inbound, f *Frame) {
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

// verifyReply returns the sender's reply socket path when it is one the real
// CLI would answer: an allowed place and name, and bound by the very process
// that connected. Otherwise "" and receipts are not sent.
func (p *Peer) verifyReply(from string, pid int) string {
	path, ok := strings.CutPrefix(from, "uds:")
	if !ok || pid <= 0 {
		return ""
	}
	if !replyPathOK(path, filepath.Dir(p.socketPath), ReplyDirs(p.uid, p.cfg.RuntimeDir, p.cfg.TmpDir)) {
		return ""
	}
	owned, err := socketOwnedBy(path, pid)
	if err != nil || !owned {
		p.log.Debug("unvettable reply target", "from", from, "pid", pid, "err", err)
		return ""
	}
	return path
}

func (p *Peer) handleUser(ctx context.Context, in *inbound, f *Frame) {
	if f.SessionID != "" && f.SessionID != p.sessionID {
		p.log.Debug("frame for another session ignored", "session_id", f.SessionID)
		return
	}
	if f.Message == nil {
		p.log.Debug("user frame without a message ignored")
		return
	}
	if in.reply == "" {
		in.reply = p.verifyReply(f.From, in.cred.PID)
	}
	p.replies.remember(f.MsgID, in.reply)
	c := ParseContent(f.Message.Content)
	m := message.Message{
		ID: f.MsgID, From: f.From, Body: c.Raw, Auth: in.auth, Attested: c.Attested,
		Protocol: message.ProtocolClaude, Time: p.clock.Now(), Plugin: f.FromPlugin,
		Attachments: f.FileAttachments,
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
		p.log.Info("inbound message dropped", "from", sender, "reason", reason.String(), "msg_id", f.MsgID)
		p.drops.report(ctx, sender, in.reply, f.MsgID, reason)
		p.emit(ctx, message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: f.MsgID, From: m.From, Reason: reason.String()}})
		return
	}
	if len(m.Attachments) > 0 {
		m.Attachments = p.acceptAttachments(m.ID, m.Attachments)
	}
	switch p.decide(in, m) {
	case verdictDeliver:
		p.emit(ctx, message.Event{Type: message.EventMessage, Message: &m})
	case verdictRefuse:
		p.log.Info("inbound message refused by policy", "from", sender, "msg_id", f.MsgID)
		p.receipt(ctx, in.reply, NewStatusReceipt(p.addr, f.MsgID, WireExpired, "refused",
			"This session refuses inbound cross-session messages"))
		p.emit(ctx, message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: f.MsgID, From: m.From, Reason: "refused"}})
	case verdictHold:
		p.hold(ctx, in.reply, m, p.holdReason(m))
	}
}

type verdict uint8

const (
	verdictDeliver verdict = iota + 1
	verdictHold
	verdictRefuse
)

// decide applies the inbound policy. Self-sent messages (our childToken)
// skip the hold, like the real CLI's self-sent verdict.
func (p *Peer) decide(in *inbound, m message.Message) verdict {
	switch p.cfg.Inbound {
	case PolicyAccept:
		return verdictDeliver
	case PolicyHold:
		return verdictHold
	case PolicyRefuse:
		return verdictRefuse
	}
	if in.auth == message.AuthChild {
		return verdictDeliver
	}
	if !m.Attested || m.Mode == message.ModeUnknown {
		// Unattested senders are held only while we bypass prompts.
		if p.cfg.Mode == message.ModeBypass {
			return verdictHold
		}
		return verdictDeliver
	}
	if m.Mode == p.cfg.Mode {
		return verdictDeliver
	}
	return verdictHold
}

func (p *Peer) holdReason(m message.Message) string {
	switch {
	case p.cfg.Inbound == PolicyHold:
		return "This session holds every inbound message for review"
	case !m.Attested:
		return "The sender did not attest its permission mode and this session bypasses prompts"
	case m.Mode == message.ModeBypass:
		return "The sender bypasses permission prompts and this session does not"
	default:
		return "The sender prompts for permissions and this session bypasses prompts"
	}
}

// receiptTimeout bounds one receipt connection.
const receiptTimeout = 5 * time.Second

// receipt sends one control line to a verified reply socket on a new
// connection. Like the real CLI, it starts with an auth line carrying the
// sender's own peerToken when the sender's key file is in our registry, and
// has none otherwise. Unvettable senders get nothing.
func (p *Peer) receipt(ctx context.Context, reply string, f Frame) {
	if reply == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, receiptTimeout)
	defer cancel()
	if err := p.write(ctx, reply, 0, f); err != nil {
		if errors.Is(err, ErrStaleKey) {
			p.log.Info("receipt not sent: the reply socket's key belongs to another process", "to", reply)
			return
		}
		p.log.Info("receipt not delivered", "to", reply, "status", f.Status, "action", f.Action, "err", err)
		return
	}
	if st, ok := StatusOf(f.Status, f.StatusDetail); ok && f.Action == ActionPeerMessageStatus && p.cfg.ReceiptSent != nil {
		p.cfg.ReceiptSent(st)
	}
}
