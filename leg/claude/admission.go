package claude

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// Limits are the inbox admission limits. The defaults are Claude Code
// 2.1.332's own (its tengu_harbor_kite_limits fallbacks), except the global
// bucket and the hold caps, which Claude Code does not have: they are the
// Qwen leg's, so a sender that names itself afresh on every frame gets no
// more through, and parks no more, on one leg than on the other.
type Limits struct {
	Sender            clock.Bucket  // each sender's bucket: the tokens it starts with and can save up, and earns back a second
	Global            clock.Bucket  // the bucket all senders share
	DedupWindow       time.Duration // how long an identical body counts as a duplicate
	MaxSelfHops       int           // hop-loop at this many of our own tokens in the chain
	MaxChainLength    int           // hop-runaway above this many chain entries
	MaxTrackedSenders int           // senders remembered; the least recently seen is forgotten
	MaxQueued         int           // queue-full at this many undelivered messages
	MaxHeld           int           // queue-full at this many held messages
	MaxHeldBytes      int           // queue-full when held bodies would pass this many bytes
}

// DefaultLimits returns Claude Code's defaults: 30 tokens refilled at 0.5/s,
// a 30 s duplicate window, hop-loop at 10 self hops, hop-runaway above 28
// entries, 256 tracked senders, 50 queued messages; and the Qwen leg's
// shared bucket of 32 refilled at one a second and 50 held messages, with
// at most 8 MiB of held bodies.
func DefaultLimits() Limits {
	return Limits{
		Sender:            clock.Bucket{Rate: 0.5, Burst: 30},
		Global:            clock.Bucket{Rate: 1, Burst: 32},
		DedupWindow:       30 * time.Second,
		MaxSelfHops:       10,
		MaxChainLength:    28,
		MaxTrackedSenders: 256,
		MaxQueued:         50,
		MaxHeld:           50,
		MaxHeldBytes:      8 << 20,
	}
}

// withDefaults fills every zero or negative field from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	l.Sender = l.Sender.OrDefault(d.Sender)
	l.Global = l.Global.OrDefault(d.Global)
	if l.DedupWindow <= 0 {
		l.DedupWindow = d.DedupWindow
	}
	if l.MaxSelfHops <= 0 {
		l.MaxSelfHops = d.MaxSelfHops
	}
	if l.MaxChainLength <= 0 {
		l.MaxChainLength = d.MaxChainLength
	}
	if l.MaxTrackedSenders <= 0 {
		l.MaxTrackedSenders = d.MaxTrackedSenders
	}
	if l.MaxQueued <= 0 {
		l.MaxQueued = d.MaxQueued
	}
	if l.MaxHeld <= 0 {
		l.MaxHeld = d.MaxHeld
	}
	if l.MaxHeldBytes <= 0 {
		l.MaxHeldBytes = d.MaxHeldBytes
	}
	return l
}

// Guard is the inbox admission guard, the same checks in the same order as
// Claude Code 2.1.332's peer guard:
//
//  1. hop-runaway: the chain has more than MaxChainLength entries;
//  2. hop-loop: our own tokens occur MaxSelfHops times or more in the chain
//     (all self tokens counted together);
//  3. rate-limited: the bucket all senders share holds less than one token
//     (ours, not Claude Code's: a sender that names itself afresh on each
//     frame gets a fresh bucket of its own, but not of this one);
//  4. duplicate: the body equals (by SHA-256) the last body admitted from the
//     same sender, less than DedupWindow ago (message ids play no part);
//  5. rate-limited: the sender's bucket holds less than one token;
//  6. queue-full: queued is MaxQueued or more.
//
// The hop checks come first because they need no state and touch no sender.
// A message dropped by checks 1 to 5 costs no token and is not remembered as
// the last body. A message that passes 5 spends a token from both buckets and
// becomes the last body before check 6, as in Claude Code: so a queue-full
// drop still costs a token, and resending the same body within the window is
// then a duplicate.
//
// Senders are tracked least-recently-seen first; a sender seen by checks 3 to
// 5 counts as seen. When MaxTrackedSenders are tracked, a new sender evicts the
// least recently seen one, which on its next message starts afresh: a full
// bucket and no duplicate memory.
//
// A Guard is safe for concurrent use.
type Guard struct {
	lim  Limits
	clk  clock.Clock
	self func() []string

	mu      sync.Mutex
	lru     *list.List               // of *senderState, most recently seen at the front
	senders map[string]*list.Element // by sender key
	global  *rate.Limiter            // the shared bucket
}

type senderState struct {
	key        string
	bucket     *rate.Limiter
	hasBody    bool
	lastBody   [sha256.Size]byte
	lastBodyAt time.Time
}

// NewGuard returns a guard with lim (zero fields take their defaults).
// selfTokens returns our own current hop tokens; it is called once per
// message, outside the guard's lock, and may be nil when we have none.
func NewGuard(lim Limits, clk clock.Clock, selfTokens func() []string) *Guard {
	if clk == nil {
		clk = clock.Real{}
	}
	lim = lim.withDefaults()
	return &Guard{
		lim:     lim,
		clk:     clk,
		self:    selfTokens,
		lru:     list.New(),
		senders: make(map[string]*list.Element),
		global:  lim.Global.Limiter(),
	}
}

// Limits returns the limits in force, defaults filled in.
func (g *Guard) Limits() Limits { return g.lim }

// CheckHops runs only the stateless hop checks (1 and 2 above). It is what a
// sender runs before relaying, and what Admit runs first. dropped is true when
// the chain must be turned away, for reason.
func (g *Guard) CheckHops(chain []string) (reason message.DropReason, dropped bool) {
	if len(chain) > g.lim.MaxChainLength {
		return message.DropHopRunaway, true
	}
	if g.self == nil || len(chain) == 0 {
		return 0, false
	}
	self := g.self()
	n := 0
	for _, c := range chain {
		for _, s := range self {
			if s != "" && c == s {
				n++
				break
			}
		}
	}
	if n >= g.lim.MaxSelfHops {
		return message.DropHopLoop, true
	}
	return 0, false
}

// Admit decides one inbound message from sender (the key the caller uses to
// tell senders apart: Claude Code uses "from:<address>", or "pid:<pid>" for a
// sender with no usable address). chain is the envelope's hop-chain and queued
// the number of undelivered messages already waiting. dropped is true when the
// message must be turned away, for reason; a message admitted returns 0, false.
func (g *Guard) Admit(sender, body string, chain []string, queued int) (reason message.DropReason, dropped bool) {
	if r, dropped := g.CheckHops(chain); dropped {
		return r, true
	}
	sum := sha256.Sum256([]byte(body))
	now := g.clk.Now()

	g.mu.Lock()
	defer g.mu.Unlock()
	if g.global.TokensAt(now) < 1 {
		return message.DropRateLimited, true
	}
	s := g.touch(sender)
	if s.hasBody && s.lastBody == sum && now.Sub(s.lastBodyAt) < g.lim.DedupWindow {
		return message.DropDuplicate, true
	}
	if !s.bucket.AllowN(now, 1) {
		return message.DropRateLimited, true
	}
	g.global.AllowN(now, 1) // it held a token at the check above, under the same lock
	s.hasBody, s.lastBody, s.lastBodyAt = true, sum, now
	if queued >= g.lim.MaxQueued {
		return message.DropQueueFull, true
	}
	return 0, false
}

// touch returns sender's state, marked most recently seen, creating it with a
// full bucket (and evicting the least recently seen sender if need be).
func (g *Guard) touch(sender string) *senderState {
	if e, ok := g.senders[sender]; ok {
		g.lru.MoveToFront(e)
		return e.Value.(*senderState)
	}
	for g.lru.Len() >= g.lim.MaxTrackedSenders {
		old := g.lru.Back()
		g.lru.Remove(old)
		delete(g.senders, old.Value.(*senderState).key)
	}
	s := &senderState{key: sender, bucket: g.lim.Sender.Limiter()}
	g.senders[sender] = g.lru.PushFront(s)
	return s
}

// Tracked reports how many senders the guard remembers.
func (g *Guard) Tracked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lru.Len()
}
