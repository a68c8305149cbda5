package router

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

func foreign(i int) string { return fmt.Sprintf("%024x", 0xf00+i) }

func TestCheckHops(t *testing.T) {
	self := HopToken()
	repeat := func(n int, s string) []string { return slices.Repeat([]string{s}, n) }
	tests := []struct {
		name  string
		chain []string
		want  message.DropReason
	}{
		{"a message with no chain is forwarded", nil, 0},
		{"a chain of other relays is forwarded", []string{foreign(1), foreign(2)}, 0},
		{"our token nine times is still forwarded", repeat(MaxSelfHops-1, self), 0},
		{"our token ten times is a hop-loop", repeat(MaxSelfHops, self), message.DropHopLoop},
		{"our tokens count wherever they stand", append(append(repeat(5, self), foreign(1)), repeat(5, self)...), message.DropHopLoop},
		{"27 entries may grow to 28", repeat(MaxForwardChain-1, foreign(3)), 0},
		{"28 entries may not grow: hop-runaway", repeat(MaxForwardChain, foreign(3)), message.DropHopRunaway},
		{"runaway is decided before loop", repeat(MaxForwardChain, self), message.DropHopRunaway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.chain)
			got, why := CheckHops(in, self)
			if why != tt.want {
				t.Fatalf("CheckHops = %s, want %s", why, tt.want)
			}
			if !reflect.DeepEqual(in, tt.chain) {
				t.Fatalf("the chain given was changed to %q", in)
			}
			if why != 0 {
				if got != nil {
					t.Fatalf("a dropped message got a chain %q", got)
				}
				return
			}
			if want := append(slices.Clone(tt.chain), self); !reflect.DeepEqual(got, want) {
				t.Fatalf("forwarded with %q, want %q", got, want)
			}
		})
	}
}

func TestHopTokenIsAStableEnvelopeToken(t *testing.T) {
	tok := HopToken()
	if len(tok) != message.HopTokenLen || strings.Trim(tok, "0123456789abcdef") != "" {
		t.Fatalf("HopToken() = %q, want %d lower-case hex characters", tok, message.HopTokenLen)
	}
	if HopToken() != tok {
		t.Fatal("the token changed within one process")
	}
	if hopToken([]byte("another key")) == tok {
		t.Fatal("another key gives the same token")
	}
	if message.DropHopLoop.String() != "hop-loop" || message.DropHopRunaway.String() != "hop-runaway" || message.DropReason(0).String() != "drop(0)" {
		t.Fatalf("wire names: %s %s %s", message.DropHopLoop, message.DropHopRunaway, message.DropReason(0))
	}
}

// newEchoLeg hosts aliases, and behind each of them session s that sends
// whatever it receives straight back: a message forwarded to it comes back
// in at its alias of the other leg's session, with the hop chain it was
// delivered with plus extra (the tokens of the relays on its side, as
// Claude Code adds its own). Two of them make a forwarding loop. What was
// forwarded to s is its SentAs, what was relayed to our senders its
// Relayed.
func newEchoLeg(name message.Protocol, s message.Session, extra int) *legtest.Fake {
	f := legtest.New(name, s)
	f.OnSend = func(context.Context, message.Message) (message.Receipt, error) {
		return message.Receipt{}, fmt.Errorf("echoLeg: only the bridge sends here")
	}
	var mu sync.Mutex
	n := 0
	f.OnSendAs = func(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error) {
		mu.Lock()
		n++
		pass := n
		mu.Unlock()
		chain := slices.Clone(m.HopChain)
		for i := range extra {
			chain = append(chain, foreign(100*pass+i))
		}
		back := message.Message{
			ID: uuid.NewString(), From: s.Address, FromName: s.Name, Body: m.Body,
			Mode: message.ModePrompting, HopChain: chain, Protocol: name, AliasOf: sender.Address,
		}
		_ = f.EmitFrom(ctx, message.Event{Type: message.EventMessage, Message: &back}) // nowhere to go once stopped
		return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
	}
	return f
}

func TestAForwardingLoopBetweenTwoAliasesIsStopped(t *testing.T) {
	tests := []struct {
		name     string
		extra    int // tokens each side's relays add per pass
		want     message.DropReason
		forwards int // messages the bridge forwards before it stops
	}{
		// Each forward adds our token once: the eleventh arrival carries it
		// ten times.
		{"a bounce that adds only our token stops with hop-loop", 0, message.DropHopLoop, MaxSelfHops},
		{"a bounce whose relays add a token each stops with hop-loop", 1, message.DropHopLoop, MaxSelfHops},
		// Three entries a pass: after 9 forwards the chain holds 27 and may
		// grow to 28; after 10 it holds 30.
		{"a bounce whose relays add two tokens each stops with hop-runaway", 2, message.DropHopRunaway, 10},
		// Four a pass: 7 forwards make 28 entries, which may not grow.
		{"a bounce whose relays add three tokens each stops with hop-runaway sooner", 3, message.DropHopRunaway, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aliceS := message.Session{Address: "uds:/tmp/cc-socks/1.sock", Protocol: message.ProtocolClaude, Name: "alice", SessionID: "s-alice"}
			bobS := message.Session{Address: "uds:/tmp/qwen-socks/2.sock", Protocol: message.ProtocolQwen, Name: "bob", SessionID: "s-bob"}
			alice, bob := newEchoLeg(message.ProtocolClaude, aliceS, tt.extra), newEchoLeg(message.ProtocolQwen, bobS, tt.extra)
			addr := map[*legtest.Fake]string{alice: aliceS.Address, bob: bobS.Address}
			r := New(Config{Bridge: true, BridgeInterval: time.Hour}, host(alice), host(bob))
			_, _, sub := r.Hub().Subscribe(-1)
			defer sub.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()

			// alice writes to bob's alias on her leg; bob answers alice's
			// alias on his, and so on. Both legs must be running first, or
			// an echo would have nowhere to go.
			<-alice.Started()
			<-bob.Started()
			alice.Emit(t, message.Event{Type: message.EventMessage, Message: &message.Message{
				ID: "m-0", From: aliceS.Address, FromName: "alice", Body: "ping", Mode: message.ModePrompting,
				Protocol: alice.Name(), AliasOf: bobS.Address,
			}})

			var drop message.Event
			timeout := time.After(10 * time.Second)
			for drop.Drop == nil {
				select {
				case ev := <-sub.C:
					if ev.Type == message.EventDrop {
						drop = ev
					}
				case <-timeout:
					t.Fatalf("no drop after %d + %d forwards", len(alice.SentAs()), len(bob.SentAs()))
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}

			fa, fb := alice.SentAs(), bob.SentAs()
			if got := len(fa) + len(fb); got != tt.forwards {
				t.Fatalf("the bridge forwarded %d messages, want %d", got, tt.forwards)
			}
			if drop.Drop.Reason != tt.want {
				t.Fatalf("dropped with %q, want %q", drop.Drop.Reason, tt.want)
			}
			// The forwards alternate, starting with bob; the message dropped
			// is the echo of the session that received last, so it came in
			// on that session's leg.
			last, source := fb, bob
			if len(fa) == len(fb) {
				last, source = fa, alice
			}
			if want := last[len(last)-1].Body; want != "ping" {
				t.Fatalf("the bounced body changed to %q", want)
			}
			if drop.Leg != source.Name() || drop.Drop.From != addr[source] {
				t.Fatalf("the drop names leg %s from %s, want %s from %s", drop.Leg, drop.Drop.From, source.Name(), addr[source])
			}
			rel := source.Relayed()
			if len(rel) != 1 || rel[0].Status != message.StatusDropped || rel[0].DropReason != tt.want || rel[0].MsgID != drop.Drop.MsgID {
				t.Fatalf("relayed to the sender: %+v, want one dropped receipt with %s for %s", rel, tt.want, drop.Drop.MsgID)
			}
			for i, m := range append(fa, fb...) {
				if len(m.HopChain) > MaxForwardChain || !slices.Contains(m.HopChain, HopToken()) {
					t.Fatalf("forward %d carried chain %q", i, m.HopChain)
				}
			}
		})
	}
}

func TestTheFirstForwardCarriesOurToken(t *testing.T) {
	alice := newEchoLeg(message.ProtocolClaude, message.Session{Address: "uds:/tmp/cc-socks/1.sock", Protocol: message.ProtocolClaude, Name: "alice"}, 0)
	r := New(Config{Bridge: true})
	tests := []struct {
		name  string
		chain []string
		want  []string
	}{
		{"a message from a session gets a chain of our token", nil, []string{HopToken()}},
		{"a message that came through other relays keeps them first", []string{foreign(1)}, []string{foreign(1), HopToken()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := message.Message{ID: "m", HopChain: tt.chain}
			if err := r.hopCheck(context.Background(), host(alice), &in); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(in.HopChain, tt.want) {
				t.Fatalf("chain = %q, want %q", in.HopChain, tt.want)
			}
		})
	}
}
