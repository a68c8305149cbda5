package qwen

import (
	"container/list"
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// Drop receipts are coalesced as Qwen Code coalesces them, so that a flood
// draws few connections back, not one per dropped message. Per (sender,
// reason): the first drop is answered at once, and again at most once a
// DropReportWindow; drops in between wait DropReceiptTrail and go out as
// one receipt, about the first of them, whose droppedMsgIds lists the
// others (up to 256). All senders together get MaxDropReceiptsPerWindow
// receipts per window (a fixed window, not a sliding one); a batch held
// back by a spent budget retries every trail and is abandoned once its
// first drop is two windows old.
const (
	DropReportWindow         = time.Minute
	DropReceiptTrail         = 5 * time.Second
	MaxDropReceiptsPerWindow = 40
	maxDropBatchAge          = 2 * DropReportWindow
	maxDropKeys              = 256
	// maxReplyTokenUnits: a longer replyToken is not kept for a deferred
	// receipt, which then goes out without an auth line.
	maxReplyTokenUnits = 256
)

// DropReceipt is one dropped receipt to send: to the sender's inbox To,
// presenting ReplyToken, about OrigMsgID, also settling DroppedMsgIDs.
type DropReceipt struct {
	To            string
	Holder        uds.Holder // who must listen at To: the sending process
	ReplyToken    Token
	OrigMsgID     string
	Reason        message.DropReason
	DroppedMsgIDs []string
}

// Frame is the receipt as it travels, sent from our inbox at from.
func (r DropReceipt) Frame(from string) StatusFrame {
	return NewDropFrame(r.OrigMsgID, from, r.Reason, r.DroppedMsgIDs)
}

// DropReceipts decides when dropped receipts go out. send is called
// without a lock held, from Note, Flush, or a clock.Clock timer; it should not
// block for long (hand the dial to a goroutine with a deadline). It is safe
// for concurrent use.
type DropReceipts struct {
	clk  clock.Clock
	send func(DropReceipt)

	mu          sync.Mutex
	lru         *list.List               // of *dropBatch, least recently noted first
	byKey       map[string]*list.Element // by sender key + "\x00" + reason
	windowStart time.Time
	sent        int // receipts in the current window
	closed      bool
}

type dropBatch struct {
	key           string
	reason        message.DropReason
	lastImmediate time.Time
	immediate     bool // lastImmediate is set
	target        *DropReceipt
	firstNoted    time.Time
	pending       int
	timer         clock.Stopper
	gen           uint64
	detached      bool
}

// NewDropReceipts returns a coalescer that hands each receipt to send.
func NewDropReceipts(clk clock.Clock, send func(DropReceipt)) *DropReceipts {
	if clk == nil {
		clk = clock.Real{}
	}
	return &DropReceipts{clk: clk, send: send, lru: list.New(), byKey: map[string]*list.Element{}, windowStart: clk.Now()}
}

// Note records that in was dropped for reason. A sender without an inbox
// address gets no receipt at all.
func (d *DropReceipts) Note(in Inbound, reason message.DropReason) {
	to := utf16Prefix(in.Frame.From, maxSenderKeyUnits)
	if to == "" {
		return
	}
	var out []DropReceipt
	d.mu.Lock()
	if !d.closed {
		out = d.noteLocked(in, to, reason)
	}
	d.mu.Unlock()
	d.deliver(out)
}

func (d *DropReceipts) noteLocked(in Inbound, to string, reason message.DropReason) []DropReceipt {
	now := d.clk.Now()
	b, out := d.touch(in.SenderKey()+"\x00"+reason.String(), now)
	b.reason = reason
	if b.pending == 0 && (!b.immediate || now.Sub(b.lastImmediate) >= DropReportWindow) && !d.budgetSpent(now) {
		b.lastImmediate, b.immediate = now, true
		r := receiptFor(in, to, reason)
		d.sent++
		return append(out, r)
	}
	b.pending++
	if b.target == nil {
		r := receiptFor(in, to, reason)
		b.target, b.firstNoted = &r, now
		d.arm(b)
	} else if len(b.target.DroppedMsgIDs) < MaxDroppedMsgIDs {
		b.target.DroppedMsgIDs = append(b.target.DroppedMsgIDs, in.Frame.MsgID)
	}
	return out
}

func receiptFor(in Inbound, to string, reason message.DropReason) DropReceipt {
	r := DropReceipt{To: to, Holder: uds.Holder{PID: in.SenderPID}, OrigMsgID: in.Frame.MsgID, Reason: reason}
	if utf16Len(string(in.Frame.ReplyToken)) <= maxReplyTokenUnits {
		r.ReplyToken = in.Frame.ReplyToken
	}
	return r
}

// touch returns the batch for key, most recently noted, making room when
// maxDropKeys are kept: the least recently noted goes, and whatever it had
// waiting is tried at once.
func (d *DropReceipts) touch(key string, now time.Time) (*dropBatch, []DropReceipt) {
	if e, ok := d.byKey[key]; ok {
		d.lru.MoveToBack(e)
		return e.Value.(*dropBatch), nil
	}
	var out []DropReceipt
	for d.lru.Len() >= maxDropKeys {
		old := d.lru.Remove(d.lru.Front()).(*dropBatch)
		delete(d.byKey, old.key)
		old.detached = true
		d.stop(old)
		if old.pending > 0 {
			if r, ok := d.sendBatch(old, now, false); ok {
				out = append(out, r)
			}
		}
	}
	b := &dropBatch{key: key}
	d.byKey[key] = d.lru.PushBack(b)
	return b, out
}

// arm waits one trail before trying the batch; never for a detached batch,
// which nothing would stop.
func (d *DropReceipts) arm(b *dropBatch) {
	if b.detached || b.timer != nil {
		return
	}
	b.gen++
	gen := b.gen
	b.timer = d.clk.AfterFunc(DropReceiptTrail, func() { d.fire(b, gen) })
}

func (d *DropReceipts) stop(b *dropBatch) {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.gen++
}

func (d *DropReceipts) fire(b *dropBatch, gen uint64) {
	var out []DropReceipt
	d.mu.Lock()
	if gen == b.gen && !d.closed {
		b.timer = nil
		if r, ok := d.sendBatch(b, d.clk.Now(), false); ok {
			out = append(out, r)
		}
	}
	d.mu.Unlock()
	d.deliver(out)
}

// sendBatch takes the batch's receipt if it may go now. Unless forced, a
// batch whose first drop is too old is abandoned, and one over the budget
// waits another trail.
func (d *DropReceipts) sendBatch(b *dropBatch, now time.Time, force bool) (DropReceipt, bool) {
	if b.target == nil {
		b.pending = 0
		return DropReceipt{}, false
	}
	if !force && now.Sub(b.firstNoted) >= maxDropBatchAge {
		b.target, b.pending = nil, 0
		return DropReceipt{}, false
	}
	if !force && d.budgetSpent(now) {
		d.arm(b)
		return DropReceipt{}, false
	}
	r := *b.target
	b.target, b.pending = nil, 0
	d.sent++
	return r, true
}

// budgetSpent rolls the window when it has passed, then reports whether
// its receipts are used up.
func (d *DropReceipts) budgetSpent(now time.Time) bool {
	if now.Sub(d.windowStart) >= DropReportWindow {
		d.windowStart, d.sent = now, 0
	}
	return d.sent >= MaxDropReceiptsPerWindow
}

func (d *DropReceipts) deliver(out []DropReceipt) {
	for _, r := range out {
		d.send(r)
	}
}

// Flush sends every batch still waiting, budget and age notwithstanding:
// called before the inbox goes away, so that no sender is left unable to
// tell a drop from a delivery. Qwen Code gives these sends one second at
// exit; bound them the same way.
func (d *DropReceipts) Flush() {
	var out []DropReceipt
	d.mu.Lock()
	if !d.closed {
		now := d.clk.Now()
		for e := d.lru.Front(); e != nil; e = e.Next() {
			b := e.Value.(*dropBatch)
			d.stop(b)
			if b.pending > 0 {
				if r, ok := d.sendBatch(b, now, true); ok {
					out = append(out, r)
				}
			}
		}
	}
	d.mu.Unlock()
	d.deliver(out)
}

// Close stops every timer and forgets every batch; nothing is sent after
// it. Call Flush first to send what waits.
func (d *DropReceipts) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for e := d.lru.Front(); e != nil; e = e.Next() {
		b := e.Value.(*dropBatch)
		b.detached = true
		d.stop(b)
	}
	d.lru.Init()
	clear(d.byKey)
}

// maxReceiptDials bounds concurrent receipt connections; past it a receipt
// is lost (receipts are best effort on the receiver's side).
const maxReceiptDials = 64

// report sends one receipt the guard asked for, best effort, to the
// sender's inbox if the sender listens there (see dial).
func (p *Leg) report(r Report) {
	to := r.Inbound.Frame.From
	if to == "" || !IsLocalIPCPath(to) {
		return
	}
	if _, ok := p.al.bySession(r.Inbound.Frame.ToSessionID); ok && r.Status == StatusDelivered {
		// Accepted at an alias only means handed to the bridge: the real
		// outcome comes from the session behind it (Relay).
		return
	}
	p.dial(to, uds.Holder{PID: r.Inbound.SenderPID}, r.Inbound.Frame.ReplyToken, r.Frame(p.socketPath))
}

// maxReportReason bounds a person's reason in a receipt, far below a frame.
const maxReportReason = 4096

// Frame is r's delivery_status from our inbox at from: with r's reason,
// clipped to maxReportReason bytes (at a rune), else the status's words.
func (r Report) Frame(from string) StatusFrame {
	f := NewStatusFrame(r.Status, r.Inbound.Frame.MsgID, from)
	if r.Reason != "" {
		f.Reason = r.Reason
		if len(f.Reason) > maxReportReason {
			f.Reason = strings.ToValidUTF8(f.Reason[:maxReportReason], "") // no rune cut in two
		}
	}
	return f
}

func (p *Leg) dropped(in Inbound, reason message.DropReason) {
	p.drops.Note(in, reason)
	m := p.toMessage(in)
	p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: m.ID, From: m.From, Reason: reason}})
}

func (p *Leg) sendDropReceipt(r DropReceipt) {
	if r.To == "" || !IsLocalIPCPath(r.To) {
		return
	}
	p.dial(r.To, r.Holder, r.ReplyToken, r.Frame(p.socketPath))
}

// dial writes one frame on its own connection in the background, at most
// maxReceiptDials at once; past that the receipt is lost and logged. The
// frame's from is only a claim: the receipt, and the replyToken the sender
// chose for its auth line, go out only when the process that sent the
// message (holder) is the one listening at to, so a sender cannot aim them
// at another session's inbox.
func (p *Leg) dial(to string, holder uds.Holder, token Token, f Frame) {
	payload, err := Payload(token, f)
	if err != nil {
		p.log.Info("qwen receipt not encoded", "err", err)
		return
	}
	select {
	case p.sendSem <- struct{}{}:
	default:
		p.log.Info("qwen receipt lost: too many in flight", "to", to)
		return
	}
	p.wg.Add(1)
	go func() {
		defer func() { <-p.sendSem; p.wg.Done() }()
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		if err := uds.DialWriteHeld(ctx, to, holder, payload); err != nil {
			if errors.Is(err, uds.ErrNotHolder) {
				p.log.Info("qwen receipt not sent: the sender does not listen at its from", "to", to, "err", err)
				return
			}
			p.log.Debug("qwen receipt not delivered", "to", to, "err", err)
			return
		}
		if sf, ok := f.(StatusFrame); ok && p.cfg.ReceiptSent != nil {
			p.cfg.ReceiptSent(sf.Status.Model())
		}
	}()
}
