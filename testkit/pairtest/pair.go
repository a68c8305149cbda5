// Package pairtest is the cross-host tests' sender and sink, beside two
// gateways' Worlds. It is a package of its own, not part of gatewaytest:
// the legs' own tests use gatewaytest, and the fakes import the legs.
package pairtest

import (
	"context"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// Pair is the cross-host tests' sender and sink: a fake Claude Code
// session beside one gateway's World and a fake Qwen Code session beside
// another's, both in the prompting review class.
type Pair struct {
	Sender *fakeclaude.Peer
	Sink   *fakeqwen.Peer
	from   *gatewaytest.World
}

// StartPair starts sender beside from and sink beside to.
func StartPair(tb testing.TB, from *gatewaytest.World, sender string, to *gatewaytest.World, sink string) *Pair {
	tb.Helper()
	return &Pair{
		Sender: fakeclaude.Start(tb, fakeclaude.Config{Name: sender, ConfigDir: from.ConfigDir, RuntimeDir: from.Runtime, Mode: message.ModePrompting}),
		Sink:   fakeqwen.Start(tb, fakeqwen.Config{Name: sink, Home: to.QwenHome, RuntimeDir: to.Runtime, Mode: message.ModePrompting}),
		from:   from,
	}
}

// Cross sends text from the sender to its gateway's alias of the sink
// (alias: SINK.HOST), each waited for up to within, and returns the message
// as it reached the sink.
func (p *Pair) Cross(ctx context.Context, tb testing.TB, alias, text string, within time.Duration) *message.Message {
	tb.Helper()
	to := fakeclaude.WaitAlias(tb, p.from.ConfigDir, alias, within)
	if _, err := p.Sender.Send(ctx, to, text, message.ModePrompting); err != nil {
		tb.Fatal(err)
	}
	ev, err := p.Sink.Wait(ctx, within, func(ev message.Event) bool {
		return ev.Type == message.EventMessage && ev.Message.Body == text
	})
	if err != nil {
		tb.Fatalf("%q never crossed to %s: %v", text, alias, err)
	}
	return ev.Message
}
