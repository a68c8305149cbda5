package qwen

import (
	"container/list"
	"crypto/sha256"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// Limits are the inbox's admission limits. The defaults are Qwen Code
// 0.24.4's (PEER_ADMISSION_LIMITS, MAX_HELD_MESSAGES, MAX_SETTLED_IDS and
// the input queue's MAX_ACCEPTED_BACKLOG).
type Limits struct {
	Sender            clock.Bucket  // each sender's bucket: the tokens it starts with and can save up, and earns back a second
	Global            clock.Bucket  // the bucket all senders share
	DedupWindow       time.Duration // how long a sender's body counts as a repeat
	MaxTrackedSenders int           // sender meters kept; see Guard
	MaxSettled        int           // settled ids remembered with their verdict
	MaxHeld           int           // held messages, per session
	MaxHeldBytes      int           // held bodies' bytes, all sessions together (ours, not Qwen Code's)
	MaxQueued         int           // accepted messages waiting to be consumed
}

// DefaultLimits returns Qwen Code's: a burst of 30 per sender refilled at
// one every two seconds, a shared burst of 32 refilled at one a second, a
// 30 s duplicate window, 256 senders, 512 settled ids, 50 held, 50 queued;
// and, as on the Claude leg, at most 8 MiB of held bodies.
func DefaultLimits() Limits {
	return Limits{
		Sender:      clock.Bucket{Rate: 0.5, Burst: 30},
		Global:      clock.Bucket{Rate: 1, Burst: 32},
		DedupWindow: 30 * time.Second, MaxTrackedSenders: 256,
		MaxSettled: 512, MaxHeld: 50, MaxHeldBytes: 8 << 20, MaxQueued: 50,
	}
}

// withDefaults fills every zero or negative field from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	l.Sender = l.Sender.OrDefault(d.Sender)
	l.Global = l.Global.OrDefault(d.Global)
	fill(&l.MaxTrackedSenders, d.MaxTrackedSenders)
	fill(&l.MaxSettled, d.MaxSettled)
	fill(&l.MaxHeld, d.MaxHeld)
	fill(&l.MaxHeldBytes, d.MaxHeldBytes)
	fill(&l.MaxQueued, d.MaxQueued)
	if l.DedupWindow <= 0 {
		l.DedupWindow = d.DedupWindow
	}
	return l
}

// burstWindow is how long a sender's bucket takes to refill from empty:
// 60 s at the defaults. The send mirror counts a burst over it.
func (l Limits) burstWindow() time.Duration {
	return time.Duration(float64(l.Sender.Burst) / l.Sender.Rate * float64(time.Second))
}

// Outcome is what the guard did with one message.
type Outcome uint8

const (
	OutcomeDelivered    Outcome = iota + 1 // queued on Deliveries; delivered receipt
	OutcomeHeld                            // parked, or already parked; held receipt
	OutcomeDropped                         // turned away for Decision.Drop; a coalesced drop receipt
	OutcomeRefused                         // the policy refuses; refused receipt
	OutcomeRepeated                        // an id already settled: its verdict is repeated
	OutcomeMisaddressed                    // pinned to a session we do not hold; misaddressed receipt
	OutcomeExpired                         // arrived while shutting down; expired receipt
)

var outcomeNames = [...]string{
	OutcomeDelivered: "delivered", OutcomeHeld: "held", OutcomeDropped: "dropped",
	OutcomeRefused: "refused", OutcomeRepeated: "repeated", OutcomeMisaddressed: "misaddressed",
	OutcomeExpired: "expired",
}

func (o Outcome) String() string { return wireName(outcomeNames[:], int(o), "outcome") }

// Decision is the guard's answer to one message.
type Decision struct {
	Outcome Outcome
	Drop    message.DropReason // with OutcomeDropped
	Cause   HoldCause          // with a fresh OutcomeHeld
	Receipt Status             // the status reported to the sender; 0 with OutcomeDropped
}

// Inbound is a user frame and what its connection proved.
type Inbound struct {
	Frame  UserFrame
	Origin Origin
	// SenderPID is the connecting process (SO_PEERCRED; 0 when unknown):
	// receipts go to Frame.From only when that process listens there.
	SenderPID int
}

// maxSenderKeyUnits bounds the sender address a key is made of (and the
// address drop receipts go to).
const maxSenderKeyUnits = 256

// SenderKey is how the guard tells senders apart, as Qwen Code does: a
// controller by its grant, a child and a peer by the address they claim
// (cut to 256 UTF-16 units), and everything without an address as one
// "unknown" sender. The claim is all there is: a sender that rotates its
// address gets a fresh meter, but not a fresh share of the global bucket.
func (in Inbound) SenderKey() string {
	if in.Origin.Kind == AuthController {
		return "controller:" + in.Origin.Controller.ID
	}
	addr := utf16Prefix(in.Frame.From, maxSenderKeyUnits)
	if in.Origin.Kind == AuthChild {
		return "own:" + addr
	}
	if addr == "" {
		return "unknown"
	}
	return "peer:" + addr
}

// Report is a receipt the guard asks to send: Status about Inbound's frame,
// to its From, authenticated with its ReplyToken. Nothing is sent when
// From is empty.
type Report struct {
	Inbound Inbound
	Status  Status
	Reason  string // a person's words for the sender (a denial's); empty for the status's own
}

// GuardConfig wires a Guard to its session. Every func is called without the
// guard's lock held, except Policy, ReviewClass, HeldExpiry, SessionID and
// OwnsSession, which must be quick and must not call the guard.
type GuardConfig struct {
	Clock  clock.Clock
	Limits Limits // zero fields take DefaultLimits

	// Policy returns crossSessionInbound for the session a frame is pinned
	// to ("" when unpinned); PolicyUnset when unset, an error when it cannot
	// be read. Nil means unset.
	Policy func(toSessionID string) (Policy, error)
	// ReviewClass is the session's own review class; message.ModeUnknown
	// (or a nil func) holds every message that parity would decide.
	ReviewClass func(toSessionID string) message.Mode
	// HeldExpiry is the hold lifetime (see ParseHeldExpiry); nil is 5m.
	HeldExpiry func(toSessionID string) time.Duration

	// SessionID is the one session this inbox answers for. A frame pinned
	// to another is misaddressed; a change of id resets the admission
	// meters. Leave nil, and set OwnsSession, for an inbox serving several.
	SessionID func() string
	// OwnsSession, for an inbox serving several sessions, reports whether
	// id is one of them. A frame must then be pinned to one.
	OwnsSession func(id string) bool

	// Report sends a receipt (see Report).
	Report func(Report)
	// Dropped hears every drop, for DropReceipts.Note and a local notice.
	Dropped func(Inbound, message.DropReason)
}

// Guard is an inbox's admission, in Qwen Code's order (see Admit). It owns
// the held messages and the queue of accepted ones. It is safe for
// concurrent use.
type Guard struct {
	cfg GuardConfig
	lim Limits
	clk clock.Clock

	mu        sync.Mutex
	global    *rate.Limiter            // the bucket all senders share
	senders   *list.List               // of *meter, least recently seen first
	meters    map[string]*list.Element // by sender key
	settled   *list.List               // of *settledID, oldest first
	settledBy map[string]*list.Element // by canonical id
	held      []*held                  // oldest first
	queue     chan Inbound
	shutdown  bool
	timer     clock.Stopper
	timerGen  uint64
	sidSeen   bool
	sid       string
}

type meter struct {
	key    string
	bucket *rate.Limiter
	bodies []bodyRec // admitted bodies inside the window, oldest first
}

type bodyRec struct {
	msgID string
	hash  [sha256.Size]byte
	at    time.Time
}

type settledID struct {
	key     string
	verdict Status
}

// NewGuard returns a guard for cfg.
func NewGuard(cfg GuardConfig) *Guard {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	lim := cfg.Limits.withDefaults()
	return &Guard{
		cfg: cfg, lim: lim, clk: cfg.Clock,
		global:  lim.Global.Limiter(),
		senders: list.New(), meters: map[string]*list.Element{},
		settled: list.New(), settledBy: map[string]*list.Element{},
		queue: make(chan Inbound, lim.MaxQueued),
	}
}

// Limits returns the limits in force, defaults filled in.
func (g *Guard) Limits() Limits { return g.lim }

// Deliveries is the queue of accepted messages, at most MaxQueued. Its
// consumer hands each to the session; while it is full, accepted messages
// are dropped queue-full. It is closed by Shutdown.
func (g *Guard) Deliveries() <-chan Inbound { return g.queue }

// pending collects what to tell the outside world once the lock is gone.
type pending struct {
	reports []Report
	drops   []dropped
}

type dropped struct {
	in     Inbound
	reason message.DropReason
}

func (p *pending) report(in Inbound, st Status) {
	p.reports = append(p.reports, Report{Inbound: in, Status: st})
}

func (g *Guard) flush(p *pending) {
	for _, d := range p.drops {
		if g.cfg.Dropped != nil {
			g.cfg.Dropped(d.in, d.reason)
		}
	}
	for _, r := range p.reports {
		if g.cfg.Report != nil {
			g.cfg.Report(r)
		}
	}
}

// Admit decides one user frame that arrived on an authenticated
// connection, in Qwen Code's order:
//
//  1. misaddressed: pinned to a session this inbox does not hold (with
//     several sessions, not pinned at all). Checked before any bucket.
//  2. the global bucket (32, one a second): rate-limited;
//  3. duplicate: the body equals the sender's last admitted body still
//     inside the window (children and controllers are exempt);
//  4. the sender's bucket (30, one per two seconds): rate-limited. Only a
//     message that passes 2 to 4 costs a token from each bucket, and its
//     body becomes the sender's last;
//  5. a settled id (compared canonically): its earlier verdict, repeated;
//  6. an id already held: held again;
//  7. the policy: refuse (refused); while shutting down, expired; accept
//     (queued, or dropped queue-full when the queue is full); or hold
//     (parked, or dropped queue-full when 50 are held for that session or
//     the held bodies would pass MaxHeldBytes).
//
// Drops leave no settled id, so a sender that waits and retries finds the
// guard as if it had waited in the first place. Every outcome after 4 that
// the session never sees (5, 6, refused, expired, queue-full) takes the
// body back out of the duplicate window, but not the tokens.
//
// Qwen Code checks 1 outside its guard (a misaddressed message costs no
// token); it is here so that one call decides a frame.
func (g *Guard) Admit(in Inbound) Decision {
	var p pending
	g.mu.Lock()
	d := g.admitLocked(in, &p)
	g.mu.Unlock()
	g.flush(&p)
	return d
}

func (g *Guard) admitLocked(in Inbound, p *pending) Decision {
	now := g.clk.Now()
	if g.misaddressed(in.Frame) {
		p.report(in, StatusMisaddressed)
		return Decision{Outcome: OutcomeMisaddressed, Receipt: StatusMisaddressed}
	}
	if g.cfg.SessionID != nil {
		sid := g.cfg.SessionID()
		if g.sidSeen && sid != g.sid {
			g.resetAdmission() // a new conversation: fresh meters
		}
		g.sidSeen, g.sid = true, sid
	}
	g.expireOverdue(now, p)
	if r, ok := g.admission(in, now); !ok {
		return g.drop(in, r, p)
	}
	key := CanonicalMsgID(in.Frame.MsgID)
	if e, ok := g.settledBy[key]; ok {
		v := e.Value.(*settledID).verdict
		g.forgetBody(in)
		p.report(in, v)
		return Decision{Outcome: OutcomeRepeated, Receipt: v}
	}
	if slices.ContainsFunc(g.held, func(h *held) bool { return CanonicalMsgID(h.in.Frame.MsgID) == key }) {
		g.forgetBody(in)
		p.report(in, StatusHeld)
		return Decision{Outcome: OutcomeHeld, Receipt: StatusHeld}
	}
	pol, cause := g.policy(in)
	switch {
	case pol == PolicyRefuse:
		g.forgetBody(in)
		g.recordSettled(in.Frame.MsgID, StatusRefused)
		p.report(in, StatusRefused)
		return Decision{Outcome: OutcomeRefused, Receipt: StatusRefused}
	case g.shutdown:
		g.forgetBody(in)
		p.report(in, StatusExpired)
		return Decision{Outcome: OutcomeExpired, Receipt: StatusExpired}
	case pol == PolicyAccept:
		if !g.enqueue(in) {
			g.forgetBody(in)
			return g.drop(in, message.DropQueueFull, p)
		}
		g.recordSettled(in.Frame.MsgID, StatusDelivered)
		p.report(in, StatusDelivered)
		return Decision{Outcome: OutcomeDelivered, Receipt: StatusDelivered}
	}
	hk := g.heldKey(in.Frame)
	n, size := 0, len(in.Frame.Content)
	for _, h := range g.held {
		if g.heldKey(h.in.Frame) == hk {
			n++
		}
		size += len(h.in.Frame.Content)
	}
	if n >= g.lim.MaxHeld || size > g.lim.MaxHeldBytes {
		g.forgetBody(in)
		return g.drop(in, message.DropQueueFull, p)
	}
	g.held = append(g.held, &held{in: in, cause: cause, since: now})
	p.report(in, StatusHeld)
	g.reschedule(now)
	return Decision{Outcome: OutcomeHeld, Cause: cause, Receipt: StatusHeld}
}

func (g *Guard) drop(in Inbound, r message.DropReason, p *pending) Decision {
	p.drops = append(p.drops, dropped{in, r})
	return Decision{Outcome: OutcomeDropped, Drop: r}
}

// enqueue puts an accepted message on the queue, unless it is full.
func (g *Guard) enqueue(in Inbound) bool {
	select {
	case g.queue <- in:
		return true
	default:
		return false
	}
}

// misaddressed: with several sessions a frame must be pinned to one we
// hold; with one, a pin must name it (when we know our id).
func (g *Guard) misaddressed(f UserFrame) bool {
	pin, pinned := f.Pin()
	if g.cfg.OwnsSession != nil {
		return !pinned || !g.cfg.OwnsSession(pin)
	}
	if !pinned || g.cfg.SessionID == nil {
		return false
	}
	own := g.cfg.SessionID()
	return own != "" && pin != own
}

// pinHere re-judges a parked frame's pin at release: the session may have
// been swapped while it waited.
func (g *Guard) pinHere(f UserFrame) bool { return !g.misaddressed(f) }

// heldKey is the hold allowance a frame counts against: one for the
// session, or one per pinned session (case-insensitive) for an inbox
// serving several.
func (g *Guard) heldKey(f UserFrame) string {
	if g.cfg.OwnsSession == nil {
		return ""
	}
	return strings.ToLower(f.ToSessionID)
}

// admission runs the buckets and the duplicate check (steps 2 to 4).
func (g *Guard) admission(in Inbound, now time.Time) (message.DropReason, bool) {
	if g.global.TokensAt(now) < 1 {
		return message.DropRateLimited, false
	}
	m := g.meter(in.SenderKey(), now)
	m.bodies = slices.DeleteFunc(m.bodies, func(b bodyRec) bool { return elapsed(now, b.at) >= g.lim.DedupWindow })
	exempt := in.Origin.Kind == AuthChild || in.Origin.Kind == AuthController
	sum := sha256.Sum256([]byte(in.Frame.Content))
	if !exempt && len(m.bodies) > 0 && m.bodies[len(m.bodies)-1].hash == sum {
		return message.DropDuplicate, false
	}
	if !m.bucket.AllowN(now, 1) {
		return message.DropRateLimited, false
	}
	g.global.AllowN(now, 1) // it held a token at the check above, under the same lock
	if !exempt {
		m.bodies = append(m.bodies, bodyRec{msgID: in.Frame.MsgID, hash: sum, at: now})
	}
	return 0, true
}

// meter returns the sender's meter, most recently seen. A new sender, when
// MaxTrackedSenders are kept, first evicts a meter whose bucket has refilled
// completely (it limits nobody; only its duplicate memory goes), else the
// least recently seen.
func (g *Guard) meter(key string, now time.Time) *meter {
	if e, ok := g.meters[key]; ok {
		g.senders.MoveToBack(e)
		return e.Value.(*meter)
	}
	for g.senders.Len() >= g.lim.MaxTrackedSenders {
		victim := g.senders.Front()
		for e := g.senders.Front(); e != nil; e = e.Next() {
			if clock.Full(e.Value.(*meter).bucket, now) {
				victim = e
				break
			}
		}
		g.senders.Remove(victim)
		delete(g.meters, victim.Value.(*meter).key)
	}
	m := &meter{key: key, bucket: g.lim.Sender.Limiter()}
	g.meters[key] = g.senders.PushBack(m)
	return m
}

func (g *Guard) resetAdmission() {
	g.senders.Init()
	clear(g.meters)
	g.global = g.lim.Global.Limiter()
}

// forgetBody takes this message's body back out of its sender's duplicate
// window (the tokens stay spent: they bound how often a sender can make us
// attempt a delivery).
func (g *Guard) forgetBody(in Inbound) {
	e, ok := g.meters[in.SenderKey()]
	if !ok {
		return
	}
	m := e.Value.(*meter)
	sum := sha256.Sum256([]byte(in.Frame.Content))
	m.bodies = slices.DeleteFunc(m.bodies, func(b bodyRec) bool { return b.hash == sum && b.msgID == in.Frame.MsgID })
}

// recordSettled remembers an id's verdict, forgetting the oldest beyond
// MaxSettled.
func (g *Guard) recordSettled(msgID string, v Status) {
	key := CanonicalMsgID(msgID)
	if e, ok := g.settledBy[key]; ok {
		g.settled.Remove(e)
	}
	g.settledBy[key] = g.settled.PushBack(&settledID{key: key, verdict: v})
	for g.settled.Len() > g.lim.MaxSettled {
		old := g.settled.Front()
		g.settled.Remove(old)
		delete(g.settledBy, old.Value.(*settledID).key)
	}
}

// Shutdown settles everything the session will never see: every held
// message and every accepted one still on the queue is expired (the sender
// must learn that no decision is coming), later arrivals are expired
// instead of held or queued, and Deliveries is closed. It is idempotent.
func (g *Guard) Shutdown() {
	var p pending
	g.mu.Lock()
	if !g.shutdown {
		g.shutdown = true
		g.reschedule(g.clk.Now()) // stops the timer
		for _, h := range g.held {
			g.forgetBody(h.in)
			p.report(h.in, StatusExpired)
		}
		g.held = nil
		for {
			select {
			case in := <-g.queue:
				p.report(in, StatusExpired)
				continue
			default:
			}
			break
		}
		close(g.queue)
	}
	g.mu.Unlock()
	g.flush(&p)
}
