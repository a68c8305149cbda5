package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// SendRequest is what a client asks to send.
type SendRequest struct {
	To       string
	Body     string
	Mode     message.Mode
	FromName string
	Files    []message.Attachment
	HopChain []string
	Unpaced  bool // see message.Message.Unpaced
	// ID is the message id to send under; empty for a fresh one. A send
	// with the id of a message the router still tracks sends nothing and
	// answers where that message stands (an idempotent retry).
	ID string
}

// Send resolves req.To, sends over the leg that reaches it and starts
// tracking. The returned snapshot is the state right after the write. When
// the leg's store took nothing, the error wraps ErrNotAccepted (and the
// snapshot shows the message failed).
func (r *Router) Send(ctx context.Context, req SendRequest) (Outbound, error) {
	if req.ID != "" {
		if snap, err := r.Message(req.ID); err == nil {
			return snap, nil
		}
	}
	l, target, err := r.Resolve(ctx, req.To)
	if err != nil {
		return Outbound{}, err
	}
	mode := req.Mode
	if mode == message.ModeUnknown {
		mode = r.cfg.DefaultMode
	}
	id := req.ID
	if id == "" {
		id = uuid.NewString()
	}
	m := message.Message{
		ID: id, To: target.Address, ToName: target.Name, ToPID: target.PID, ToSessionID: target.SessionID, Body: req.Body,
		Mode: mode, FromName: req.FromName, HopChain: req.HopChain, Attachments: req.Files, Unpaced: req.Unpaced,
		Protocol: l.Name(), Time: r.cfg.Clock.Now(),
	}
	var notAccepted error
	send := func(ctx context.Context, m message.Message) (message.Receipt, error) {
		if err := carries(l, m.Attachments); err != nil {
			return message.Receipt{}, err
		}
		rc, err := l.Send(ctx, m)
		if errors.Is(err, message.ErrNotAccepted) {
			notAccepted = err
		}
		return rc, err
	}
	r.dispatch(ctx, l, m, nil, send, "out") // publishes its first receipt
	snap, _ := r.Message(m.ID)
	if notAccepted != nil {
		return snap, fmt.Errorf("%s: %w", l.Name(), notAccepted)
	}
	return snap, nil
}

// Replay answers an idempotent retry of message id and sends nothing:
// where the router says it stands, or, once the router forgot it (a
// restart, or more than KeepOutbound sends since), where a leg that keeps
// what it accepted says it stands, tracked again from then on. Both
// forgotten is ErrUnknownMessage.
func (r *Router) Replay(id string) (Outbound, error) {
	if snap, err := r.Message(id); err == nil {
		return snap, nil
	}
	for _, l := range r.legs {
		rl, ok := l.(leg.Recaller)
		if !ok {
			continue
		}
		m, rc, found := rl.Recall(id)
		if !found {
			continue
		}
		r.mu.Lock()
		_, known := r.out[id] // a concurrent replay tracked it first
		if !known {
			r.rememberLocked(&outbound{msg: m, track: message.NewTracker(), changed: make(chan struct{})})
		}
		r.mu.Unlock()
		if !known {
			r.apply(rc)
		}
		return r.Message(id)
	}
	return Outbound{}, fmt.Errorf("%w: %s", ErrUnknownMessage, id)
}

// ErrNoFiles fails a message with attachments to a leg that cannot carry
// them: sent without them, the receiver would never know they existed.
var ErrNoFiles = errors.New("cannot carry files")

// carries says whether leg can take the attachments atts.
func carries(l leg.Leg, atts []message.Attachment) error {
	if _, ok := l.(leg.FileCarrier); ok || len(atts) == 0 {
		return nil
	}
	return fmt.Errorf("the %s leg %w: %d attached, none sent; send the text alone, or to a Claude Code or remote session", l.Name(), ErrNoFiles, len(atts))
}

// dropper is an error from a leg's Send that stands for a drop: the
// receiver's published limits would have turned the message away.
type dropper interface {
	error
	DropReason() message.DropReason
}

// dispatch remembers m, writes it with send over leg, and applies the first
// receipt (failed when the write failed); a forward links it to the message
// it passes on. It is the one way a message leaves the router.
func (r *Router) dispatch(ctx context.Context, l leg.Leg, m message.Message, fwd *forward,
	send func(context.Context, message.Message) (message.Receipt, error), dir string) message.Receipt {
	o := &outbound{msg: m, track: message.NewTracker(), changed: make(chan struct{}), fwd: fwd}
	r.remember(o)
	ctx, traced := r.traceRoute(ctx, l, o, dir)
	rc, err := send(ctx, m)
	var dr dropper
	switch {
	case errors.As(err, &dr):
		// Refused before writing because the receiver would drop it: say
		// so in the receivers' own vocabulary.
		rc = message.Receipt{MsgID: m.ID, Status: message.StatusDropped, DropReason: dr.DropReason(), Reason: err.Error()}
	case err != nil:
		rc = message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: err.Error()}
	}
	rc.MsgID = m.ID
	traced(rc)
	r.cfg.Metrics.Message(ctx, string(l.Name()), dir)
	r.apply(rc)
	if fwd == nil {
		// A send's first receipt is shown before its settle window can
		// start, so an inferred delivery never shows ahead of it.
		r.hub.Publish(message.Event{Type: message.EventReceipt, Leg: l.Name(), Receipt: &rc})
	}
	r.settleLater(l, o, rc)
	return rc
}

// settleLater infers delivery for a leg whose receivers send no receipt for
// a clean delivery, when none has come within its settle window.
func (r *Router) settleLater(l leg.Leg, o *outbound, rc message.Receipt) {
	st, ok := l.(leg.Settler)
	if !ok || rc.Status != message.StatusSent {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o.track.Status == message.StatusSent {
		id, sent := o.msg.ID, o.fwd == nil
		o.settle = r.cfg.Clock.AfterFunc(st.Settle(), func() {
			rc := message.Receipt{MsgID: id, Status: message.StatusDelivered, Time: r.cfg.Clock.Now(),
				Detail: "inferred", Reason: "no receipt within the settle window; the receiver sends none for a clean delivery"}
			// found in r.settling if forgotten meanwhile; shown as Send
			// shows the first receipt of what it sent
			if r.apply(rc) && sent {
				r.hub.Publish(message.Event{Type: message.EventReceipt, Leg: l.Name(), Receipt: &rc})
			}
		})
		if r.out[id] != o { // forgotten before its window was set
			r.keepSettling(id, o)
		}
	}
}

func (r *Router) remember(o *outbound) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rememberLocked(o)
}

// rememberLocked is remember with r.mu held.
func (r *Router) rememberLocked(o *outbound) {
	r.out[o.msg.ID] = o
	r.order = append(r.order, o.msg.ID)
	// Forget the oldest beyond the cap; a message still waiting on a receipt
	// is forgotten too, rather than growing without bound.
	for len(r.order) > r.cfg.KeepOutbound {
		old := r.order[0]
		r.order = r.order[1:]
		// A forward's settle window runs on: its outcome is relayed then.
		if oo := r.out[old]; oo != nil && oo.settle != nil && !r.keepSettling(old, oo) {
			oo.settle.Stop() // its outcome is not relayed
		}
		r.out[old].endSpan(statusForgotten)
		delete(r.out, old)
	}
}

// keepSettling keeps o, forgotten while its settle window runs, in
// r.settling when it forwards a message (its outcome is relayed then) and
// the set has room (4*KeepOutbound); r.mu is held.
func (r *Router) keepSettling(id string, o *outbound) bool {
	if o.fwd == nil || len(r.settling) >= 4*r.cfg.KeepOutbound {
		return false
	}
	r.settling[id] = o
	return true
}

// ErrUnknownMessage is returned for an id the router does not remember.
var ErrUnknownMessage = errors.New("unknown message id")

// Message returns where an outbound message stands.
func (r *Router) Message(id string) (Outbound, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.out[id]
	if !ok {
		return Outbound{}, ErrUnknownMessage
	}
	return snapshot(o), nil
}

func snapshot(o *outbound) Outbound {
	return Outbound{Message: o.msg, Status: o.track.Status, Receipts: append([]message.Receipt(nil), o.track.Receipts...)}
}

// Wait blocks until the message reaches a final status or ctx ends, and
// returns the latest snapshot either way.
func (r *Router) Wait(ctx context.Context, id string) (Outbound, error) {
	for {
		r.mu.Lock()
		o, ok := r.out[id]
		if !ok {
			r.mu.Unlock()
			return Outbound{}, ErrUnknownMessage
		}
		snap, ch := snapshot(o), o.changed
		r.mu.Unlock()
		if snap.Status.Final() {
			return snap, nil
		}
		select {
		case <-ctx.Done():
			return snap, ctx.Err()
		case <-ch:
		}
	}
}

// Leg returns the leg named p.
func (r *Router) Leg(p message.Protocol) (leg.Leg, bool) {
	for _, l := range r.legs {
		if l.Name() == p {
			return l, true
		}
	}
	return nil, false
}
