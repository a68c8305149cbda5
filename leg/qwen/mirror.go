package qwen

import (
	"container/list"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// The send mirror: before writing, a Qwen Code session checks its own copy
// of the receiver's per-sender limits for that inbox, and refuses a send
// the receiver would only drop, so that the model is told to batch instead
// of learning from a stream of dropped receipts. Records publish no limits,
// so the mirror assumes the receiver's defaults (DefaultLimits: a burst of
// 30 refilled at one per two seconds, a 30 s duplicate window). It cannot
// see the receiver's global bucket, which other senders share, nor its
// queue: those drops still arrive as receipts, and Observe folds them back
// in.

// ErrWouldDrop is matched by every *WouldDropError.
var ErrWouldDrop = errors.New("the receiver would drop this message")

// WouldDropError says why the mirror refused a send. Its text is meant for
// whoever asked for the send, a model included.
type WouldDropError struct {
	Target      string        // the inbox
	Repeat      bool          // the same body went there inside the window
	Window      time.Duration // the duplicate window, or the burst window
	SentInBurst int           // messages sent there in the current burst
}

func (e *WouldDropError) Error() string {
	switch {
	case e.Repeat:
		return fmt.Sprintf("not sent: the same message went to that session less than %s ago, and its inbox drops an identical repeat unread; say something new, or wait for a reply", e.Window)
	case e.SentInBurst == 0:
		return "not sent: that session's inbox is still over its rate limit; wait a little before sending more"
	}
	return fmt.Sprintf("not sent: %d messages went to that session in the last %s and its inbox would drop more; put what remains into one message, or wait a little", e.SentInBurst, e.Window)
}

// DropReason is the drop the receiver would have answered with, so a
// bridged sender hears "dropped: rate-limited" (or "duplicate") rather
// than a bare failure.
func (e *WouldDropError) DropReason() message.DropReason {
	if e.Repeat {
		return message.DropDuplicate
	}
	return message.DropRateLimited
}

// Unwrap makes errors.Is(err, ErrWouldDrop) true.
func (e *WouldDropError) Unwrap() error { return ErrWouldDrop }

// Mirror is the sender's copy of each receiver's limits, per target inbox
// (at most MaxTrackedSenders targets: one whose bucket is full goes first,
// else the least recently used). It is safe for concurrent use.
type Mirror struct {
	clk clock.Clock
	lim Limits

	mu      sync.Mutex
	lru     *list.List               // of *paced, least recently used first
	targets map[string]*list.Element // by inbox path
}

type paced struct {
	target      string
	bucket      *rate.Limiter
	burstStart  time.Time
	sentInBurst int
	bodies      []*pacedBody
	generation  uint64 // bumped by Drain: older tokens are not refunded
}

type pacedBody struct {
	key        string // canonical msgId
	hash       [sha256.Size]byte
	at         time.Time
	generation uint64
	spent      bool // its token has not been refunded
}

// NewMirror returns a mirror of lim (zero fields take DefaultLimits).
func NewMirror(clk clock.Clock, lim Limits) *Mirror {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Mirror{clk: clk, lim: lim.withDefaults(), lru: list.New(), targets: map[string]*list.Element{}}
}

// Reservation is a token taken for one send. Refund it when the frame was
// definitely not written.
type Reservation struct {
	m    *Mirror
	p    *paced
	body *pacedBody
	once *sync.Once
}

// Refund gives the token back and forgets the body, as if the send had
// not been tried: for a write that definitely did not happen (no socket, a
// refused connection, a busy listener, a frame too large). It is safe to
// call more than once, and on the zero Reservation.
func (r Reservation) Refund() {
	if r.m == nil {
		return
	}
	r.once.Do(func() {
		r.m.mu.Lock()
		defer r.m.mu.Unlock()
		r.m.refund(r.p, r.body, true)
		r.p.forget([]string{r.body.key})
	})
}

// Reserve checks a send of body with msgID to the inbox at target against
// the mirror, in the receiver's order (a repeat first, then the rate), and
// takes a token for it. A *WouldDropError means do not send.
func (m *Mirror) Reserve(target, body, msgID string) (Reservation, error) {
	now := m.clk.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.touch(target, now)
	p.bodies = slices.DeleteFunc(p.bodies, func(b *pacedBody) bool { return elapsed(now, b.at) >= m.lim.DedupWindow })
	sum := sha256.Sum256([]byte(body))
	if n := len(p.bodies); n > 0 && p.bodies[n-1].hash == sum {
		return Reservation{}, &WouldDropError{Target: target, Repeat: true, Window: m.lim.DedupWindow}
	}
	if p.bucket.TokensAt(now) < 1 {
		return Reservation{}, &WouldDropError{Target: target, Window: m.lim.burstWindow(), SentInBurst: p.sentInBurst}
	}
	// A burst starts afresh from a full bucket, or once a refill's worth of
	// time has passed since it began.
	if clock.Full(p.bucket, now) || now.Sub(p.burstStart) > m.lim.burstWindow() {
		p.sentInBurst, p.burstStart = 0, now
	}
	p.bucket.AllowN(now, 1)
	b := &pacedBody{key: CanonicalMsgID(msgID), hash: sum, at: now, generation: p.generation, spent: true}
	p.bodies = append(p.bodies, b)
	p.sentInBurst++
	return Reservation{m: m, p: p, body: b, once: new(sync.Once)}, nil
}

func (m *Mirror) touch(target string, now time.Time) *paced {
	if e, ok := m.targets[target]; ok {
		m.lru.MoveToBack(e)
		return e.Value.(*paced)
	}
	for m.lru.Len() >= m.lim.MaxTrackedSenders {
		victim := m.lru.Front()
		for e := m.lru.Front(); e != nil; e = e.Next() {
			if clock.Full(e.Value.(*paced).bucket, now) {
				victim = e
				break
			}
		}
		m.lru.Remove(victim)
		delete(m.targets, victim.Value.(*paced).target)
	}
	p := &paced{target: target, bucket: m.lim.Sender.Limiter(), burstStart: now}
	m.targets[target] = m.lru.PushBack(p)
	return p
}

// refund returns a body's token, unless it was refunded already or a Drain
// has happened since it was taken.
func (m *Mirror) refund(p *paced, b *pacedBody, unburst bool) {
	if !b.spent {
		return
	}
	b.spent = false
	if unburst {
		p.sentInBurst = max(0, p.sentInBurst-1)
	}
	if b.generation == p.generation {
		// Taking -1 gives one back; the limiter never counts more than
		// its burst.
		p.bucket.AllowN(m.clk.Now(), -1)
	}
}

func (p *paced) forget(ids []string) {
	p.bodies = slices.DeleteFunc(p.bodies, func(b *pacedBody) bool {
		return slices.ContainsFunc(ids, func(id string) bool { return CanonicalMsgID(id) == b.key })
	})
}

func (m *Mirror) find(target, msgID string) (*paced, *pacedBody) {
	e, ok := m.targets[target]
	if !ok {
		return nil, nil
	}
	p := e.Value.(*paced)
	key := CanonicalMsgID(msgID)
	for _, b := range p.bodies {
		if b.key == key {
			return p, b
		}
	}
	return p, nil
}

// Drain empties target's bucket: its inbox said rate-limited, so the
// receiver's meter is lower than ours.
func (m *Mirror) Drain(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.targets[target]; ok {
		p := e.Value.(*paced)
		p.bucket = m.lim.Sender.Limiter()
		p.bucket.AllowN(m.clk.Now(), m.lim.Sender.Burst)
		p.generation++
	}
}

// Forget takes these messages' bodies out of target's duplicate window:
// the receiver never kept them (dropped other than as a duplicate, denied,
// refused, expired), so a re-send would not be a repeat there.
func (m *Mirror) Forget(target string, msgIDs ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.targets[target]; ok {
		e.Value.(*paced).forget(msgIDs)
	}
}

// Refund gives back msgID's token and forgets its body: the receiver
// answered misaddressed, having charged nothing.
func (m *Mirror) Refund(target, msgID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, b := m.find(target, msgID); b != nil {
		m.refund(p, b, false)
		p.forget([]string{msgID})
	}
}

// RefundToken gives back msgID's token but keeps its body: the receiver
// dropped it as a duplicate, which costs no token there, and would drop the
// same body again.
func (m *Mirror) RefundToken(target, msgID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, b := m.find(target, msgID); b != nil {
		m.refund(p, b, false)
	}
}

// Observe folds the moves one receipt made (Ledger.Apply) into the mirror,
// as Qwen Code does: a duplicate drop refunds the token; any other drop,
// and a denial, refusal or expiry, forgets the body; a misaddressed answer
// refunds both; a rate-limited drop of a message sent within the last
// refill window (60 s at the defaults) drains the target's bucket. Held
// and delivered change nothing.
func (m *Mirror) Observe(moves []Settled) {
	drain := map[string]bool{}
	for _, s := range moves {
		switch st := s.Receipt.Status; {
		case st == message.StatusDropped && s.Receipt.DropReason == message.DropDuplicate:
			m.RefundToken(s.Target, s.MsgID)
		case st == message.StatusDropped:
			m.Forget(s.Target, s.MsgID)
			if s.Receipt.DropReason == message.DropRateLimited && s.Age <= m.lim.burstWindow() {
				drain[s.Target] = true
			}
		case st == message.StatusMisaddressed:
			m.Refund(s.Target, s.MsgID)
		case st == message.StatusHeld || st == message.StatusDelivered:
		default:
			m.Forget(s.Target, s.MsgID)
		}
	}
	for t := range drain {
		m.Drain(t)
	}
}
