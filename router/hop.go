package router

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// The hop guard of the bridge. Every message the bridge forwards between
// legs gets the gateway's hop token appended to its hop chain, which the
// legs carry (the Claude envelope's hop-chain, the Qwen frame's hopChain
// extension), so a message bounced between aliases comes back with our
// token in it again and again and is stopped, whichever legs it crosses.
// The limits are Claude Code's own guard's. A message turned away is a drop
// for message.DropHopLoop or message.DropHopRunaway.
const (
	MaxSelfHops = 10 // hop-loop once our token occurs this often in the chain
	// MaxForwardChain is the runaway limit: hop-runaway when forwarding
	// would make the chain longer. It is lower than the wire's
	// message.MaxHopChain (32) to leave room for the entries a bridged
	// crossing adds after us (the receiving leg's own relays), so a chain
	// we forward is never cut short by the grammar on the other side.
	MaxForwardChain = message.MaxHopChain - 4 // 28, as Claude Code's guard
)

// HopError is a message the bridge did not forward because of its chain.
type HopError struct {
	MsgID  string
	Reason message.DropReason
	Chain  int // entries in the chain it arrived with
}

func (e *HopError) Error() string {
	switch e.Reason {
	case message.DropHopLoop:
		return fmt.Sprintf("not forwarded: the message has already passed through this gateway %d times (a forwarding loop between aliases)", MaxSelfHops)
	case message.DropHopRunaway:
		return fmt.Sprintf("not forwarded: its hop chain already has %d entries and may not grow past %d (a runaway relay)", e.Chain, MaxForwardChain)
	}
	return "not forwarded: " + e.Reason.String()
}

// hopKey is drawn once per process, as Claude Code draws its own at start:
// our token is unguessable from outside and new on every start.
var hopKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	rand.Read(k) // never fails (crypto/rand crashes the process instead)
	return k
})

// HopToken is this process's hop-chain entry: hex(HMAC-SHA256(per-process
// key, "gateway")) cut to 24 characters, the shape the Claude envelope's
// grammar and the Qwen frame's extension accept. Every router in the process
// shares it: one gateway, one token.
func HopToken() string { return hopToken(hopKey()) }

func hopToken(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("gateway"))
	return hex.EncodeToString(m.Sum(nil))[:message.HopTokenLen]
}

// CheckHops decides whether a message with chain may be forwarded by the
// holder of token self, in Claude Code's order: hop-runaway first (it needs
// no counting), then hop-loop. It returns the chain to forward with (a new
// slice, self appended) or why not.
func CheckHops(chain []string, self string) ([]string, message.DropReason) {
	if len(chain)+1 > MaxForwardChain {
		return nil, message.DropHopRunaway
	}
	n := 0
	for _, h := range chain {
		if h == self {
			n++
		}
	}
	if n >= MaxSelfHops {
		return nil, message.DropHopLoop
	}
	return append(append(make([]string, 0, len(chain)+1), chain...), self), 0
}

// hopCheck runs the hop guard on in, which arrived at an alias on source,
// before the bridge forwards it: on success in.HopChain gains our token (the
// forward carries it). A message turned away is published as a drop, and
// its sender is told with a dropped receipt carrying the reason.
func (r *Router) hopCheck(ctx context.Context, source leg.Leg, in *message.Message) error {
	chain, why := CheckHops(in.HopChain, HopToken())
	if why == 0 {
		in.HopChain = chain
		return nil
	}
	err := &HopError{MsgID: in.ID, Reason: why, Chain: len(in.HopChain)}
	r.log.Info("bridged message dropped", "msg_id", in.ID, "from", in.From, "to", in.AliasOf,
		"drop_reason", why.String(), "chain", len(in.HopChain))
	r.cfg.Metrics.Drop(ctx, string(source.Name()), why.String())
	r.hub.Publish(message.Event{Type: message.EventDrop, Leg: source.Name(),
		Drop: &message.Drop{MsgID: in.ID, From: in.From, Reason: why}})
	if h, ok := source.(leg.AliasHost); ok {
		h.Relay(ctx, *in, message.Receipt{MsgID: in.ID, Status: message.StatusDropped,
			DropReason: why, Reason: err.Error(), Time: r.cfg.Clock.Now()})
	}
	return err
}
