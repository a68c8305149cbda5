package qwen

import (
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// HoldForever is the hold lifetime of the "never" setting.
const HoldForever = time.Duration(math.MaxInt64)

// DefaultHeldExpiry is the hold lifetime when nothing is set, or when the
// setting is not one of its four values.
const DefaultHeldExpiry = 5 * time.Minute

var heldExpiryWire = map[string]time.Duration{"1m": time.Minute, "5m": 5 * time.Minute, "10m": 10 * time.Minute, "never": HoldForever}

// ParseHeldExpiry reads agents.crossSessionHeldExpiry: 1m, 5m, 10m or never
// (HoldForever). Anything else, "" included, is the 5m default, as in Qwen
// Code.
func ParseHeldExpiry(s string) time.Duration {
	if d, ok := heldExpiryWire[s]; ok {
		return d
	}
	return DefaultHeldExpiry
}

type held struct {
	in    Inbound
	cause HoldCause
	since time.Time
}

// expiry is the hold lifetime for a frame.
func (g *Guard) expiry(f UserFrame) time.Duration {
	if g.cfg.HeldExpiry == nil {
		return DefaultHeldExpiry
	}
	if d := g.cfg.HeldExpiry(f.ToSessionID); d > 0 {
		return d
	}
	return DefaultHeldExpiry
}

// expireOverdue settles every hold that has run out: expired, judged
// against the lifetime configured now.
func (g *Guard) expireOverdue(now time.Time, p *pending) {
	keep := g.held[:0]
	var gone []*held
	for _, h := range g.held {
		if d := g.expiry(h.in.Frame); d != HoldForever && elapsed(now, h.since) >= d {
			gone = append(gone, h)
			continue
		}
		keep = append(keep, h)
	}
	clear(g.held[len(keep):])
	g.held = keep
	for _, h := range gone {
		g.forgetBody(h.in)
		g.recordSettled(h.in.Frame.MsgID, StatusExpired)
		p.report(h.in, StatusExpired)
	}
	if len(gone) > 0 {
		g.reschedule(now)
	}
}

// reschedule arms one timer for the hold that runs out first.
func (g *Guard) reschedule(now time.Time) {
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	g.timerGen++
	if g.shutdown {
		return
	}
	next := HoldForever
	for _, h := range g.held {
		if d := g.expiry(h.in.Frame); d != HoldForever {
			next = min(next, d-elapsed(now, h.since))
		}
	}
	if next == HoldForever {
		return
	}
	gen := g.timerGen
	g.timer = g.clk.AfterFunc(max(next, time.Millisecond), func() { g.onTimer(gen) })
}

func (g *Guard) onTimer(gen uint64) {
	var p pending
	g.mu.Lock()
	if gen == g.timerGen {
		g.timer = nil
		now := g.clk.Now()
		g.expireOverdue(now, &p)
		g.reschedule(now)
	}
	g.mu.Unlock()
	g.flush(&p)
}

// HeldMessage is a message parked for a person.
type HeldMessage struct {
	Inbound Inbound
	Cause   HoldCause
	Since   time.Time
	Expires time.Time // zero when it never expires
}

// Held lists the parked messages, oldest first, after settling any whose
// hold has run out.
func (g *Guard) Held() []HeldMessage {
	var p pending
	g.mu.Lock()
	now := g.clk.Now()
	g.expireOverdue(now, &p)
	out := make([]HeldMessage, 0, len(g.held))
	for _, h := range g.held {
		hm := HeldMessage{Inbound: h.in, Cause: h.cause, Since: h.since}
		if d := g.expiry(h.in.Frame); d != HoldForever {
			hm.Expires = h.since.Add(d)
		}
		out = append(out, hm)
	}
	g.mu.Unlock()
	g.flush(&p)
	return out
}

// DecideResult is what became of a Decide.
type DecideResult uint8

const (
	DecideDone   DecideResult = iota + 1 // released (delivered) or denied
	DecideGone                           // no such held message (expired, decided, never held), or its session is gone (misaddressed)
	DecideFailed                         // released, but the queue is full: parked again where it was, held receipt repeated
)

var decideNames = [...]string{DecideDone: "done", DecideGone: "gone", DecideFailed: "failed"}

func (r DecideResult) String() string { return wireName(decideNames[:], int(r), "decide") }

// Decide releases (release true) or denies a held message, by its exact
// msgId; a denial's reason, when given, is what its sender is told.
func (g *Guard) Decide(msgID string, release bool, reason string) DecideResult {
	var p pending
	g.mu.Lock()
	r := g.decideLocked(msgID, release, reason, &p)
	g.mu.Unlock()
	g.flush(&p)
	return r
}

func (g *Guard) decideLocked(msgID string, release bool, reason string, p *pending) DecideResult {
	now := g.clk.Now()
	g.expireOverdue(now, p)
	i := slices.IndexFunc(g.held, func(h *held) bool { return h.in.Frame.MsgID == msgID })
	if i < 0 {
		return DecideGone
	}
	h := g.held[i]
	g.held = slices.Delete(g.held, i, i+1)
	defer g.reschedule(now)
	if !release {
		g.forgetBody(h.in)
		g.recordSettled(msgID, StatusDenied)
		p.reports = append(p.reports, Report{Inbound: h.in, Status: StatusDenied, Reason: reason})
		return DecideDone
	}
	if !g.pinHere(h.in.Frame) {
		g.settleMisaddressed(h.in, p)
		return DecideGone
	}
	if !g.enqueue(h.in) {
		g.held = slices.Insert(g.held, i, h)
		p.report(h.in, StatusHeld)
		return DecideFailed
	}
	g.recordSettled(msgID, StatusDelivered)
	p.report(h.in, StatusDelivered)
	return DecideDone
}

func (g *Guard) settleMisaddressed(in Inbound, p *pending) {
	g.forgetBody(in)
	g.recordSettled(in.Frame.MsgID, StatusMisaddressed)
	p.report(in, StatusMisaddressed)
}

// Reevaluate runs every held message through the policy again, after our
// review class or the setting changed: what is now accepted is released
// (or stays held, receipt repeated, when the queue is full), what is now
// refused is denied, the rest stays with its new cause. An inbox serving
// several sessions first settles holds for sessions it no longer holds as
// misaddressed. It returns how many were released.
func (g *Guard) Reevaluate() int {
	var p pending
	g.mu.Lock()
	n := g.reevaluateLocked(&p)
	g.mu.Unlock()
	g.flush(&p)
	return n
}

func (g *Guard) reevaluateLocked(p *pending) int {
	now := g.clk.Now()
	g.expireOverdue(now, p)
	defer g.reschedule(now)
	var still, release []*held
	for _, h := range g.held {
		if g.cfg.OwnsSession != nil && !g.pinHere(h.in.Frame) {
			g.settleMisaddressed(h.in, p)
			continue
		}
		switch pol, cause := g.policy(h.in); pol {
		case PolicyAccept:
			release = append(release, h)
		case PolicyRefuse:
			g.forgetBody(h.in) // someone chose: denied, not refused
			g.recordSettled(h.in.Frame.MsgID, StatusDenied)
			p.report(h.in, StatusDenied)
		default:
			h.cause = cause
			still = append(still, h)
		}
	}
	released := 0
	for _, h := range release {
		switch {
		case !g.pinHere(h.in.Frame):
			g.settleMisaddressed(h.in, p)
		case g.enqueue(h.in):
			released++
			g.recordSettled(h.in.Frame.MsgID, StatusDelivered)
			p.report(h.in, StatusDelivered)
		default:
			still = append(still, h)
			p.report(h.in, StatusHeld)
		}
	}
	slices.SortStableFunc(still, func(a, b *held) int { return a.since.Compare(b.since) })
	g.held = still
	return released
}

// ForgetController strips a revoked grant's authority from the messages
// it has waiting: they are judged as an ordinary peer's from now on (their
// hold cause is updated; nothing is released).
func (g *Guard) ForgetController(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, h := range g.held {
		if h.in.Origin.Kind == AuthController && h.in.Origin.Controller.ID == id {
			h.in.Origin = Origin{Kind: AuthPeer}
			if pol, cause := g.policy(h.in); pol == PolicyHold {
				h.cause = cause
			}
		}
	}
}

// Held lists messages our inbox holds.
func (p *Leg) Held() []message.Held {
	hs := p.guard.Held()
	out := make([]message.Held, 0, len(hs))
	for _, h := range hs {
		out = append(out, message.Held{Message: p.toMessage(h.Inbound), Reason: h.Cause.Sentence(), Since: h.Since, Expires: h.Expires})
	}
	return out
}

// ErrNotHeld means no held message has that id.
var ErrNotHeld = errors.New("no held message with that id")

// ErrQueueFull means a release found the delivery queue full; the message
// stays held.
var ErrQueueFull = errors.New("the delivery queue is full: the message stays held, try again")

// Decide releases or denies a held message.
func (p *Leg) Decide(_ context.Context, id string, release bool, reason string) error {
	switch p.guard.Decide(id, release, reason) {
	case DecideDone:
		return nil
	case DecideFailed:
		return ErrQueueFull
	}
	return ErrNotHeld
}
