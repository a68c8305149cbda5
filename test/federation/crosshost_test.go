package federation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/pairtest"
)

// claudeAlias waits for host's alias worker named name and returns its
// address.
func claudeAlias(t *testing.T, configDir, name string) string {
	t.Helper()
	return fakeclaude.WaitAlias(t, configDir, name, 20*time.Second)
}

// qwenListed waits until the Qwen peer lists a session named name.
func qwenListed(t *testing.T, q *fakeqwen.Peer, name string) message.Session {
	t.Helper()
	var got message.Session
	testutil.EventuallyWithin(t, 20*time.Second, "the qwen side lists "+name, func() bool {
		ss, _ := q.Sessions(context.Background())
		for _, s := range ss {
			if s.Name == name {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

// Three hosts on one three-node cluster. A fake Claude Code session on a
// reaches fake Qwen Code sessions on c through its alias NAME.HOST (which
// its own CLI would use), and a's API and CLI reach them by NAME.HOST and
// NAME@HOST; c's sessions hold, deny, refuse or accept, and every receipt
// comes back to the sender in its own protocol's words; c's answer to the
// sender's name there, SENDER.ORIGIN, comes back to a.
func TestSessionsOnThreeHostsReachEachOtherByNameWithReceipts(t *testing.T) {
	nc := cluster(t)
	a := startHost(t, "a", nc.URLs())
	b := startHost(t, "b", nc.URL(1)+","+nc.URL(2), "--legs", "none") // a CI runner: no sessions of its own
	c := startHost(t, "c", nc.URL(2)+","+nc.URL(0))
	pair := pairtest.StartPair(t, a.W, "alice", c.W, "sink")
	alice, sink := pair.Sender, pair.Sink
	gate := c.qwen(t, fakeqwen.Config{Name: "gate", Mode: message.ModePrompting, Inbound: qwen.PolicyHold})
	c.qwen(t, fakeqwen.Config{Name: "wall", Mode: message.ModePrompting, Inbound: qwen.PolicyRefuse})
	ctx := testutil.Context(t, 120*time.Second)

	alias := claudeAlias(t, a.W.ConfigDir, "sink.c")
	gateAlias := claudeAlias(t, a.W.ConfigDir, "gate.c")
	receipt := func(t *testing.T, id string) claude.Frame {
		t.Helper()
		f, err := alice.WaitControl(ctx, func(f claude.Frame) bool { return f.OrigMsgID == id })
		if err != nil {
			t.Fatalf("no receipt for %s at alice: %v", id, err)
		}
		return f
	}
	arrived := func(t *testing.T, q *fakeqwen.Peer, typ message.EventType, body string) message.Event {
		t.Helper()
		ev, err := q.Wait(ctx, 30*time.Second, func(ev message.Event) bool {
			switch {
			case ev.Type != typ:
				return false
			case ev.Message != nil:
				return ev.Message.Body == body
			case ev.Held != nil:
				return ev.Held.Message.Body == body
			}
			return false
		})
		if err != nil {
			t.Fatalf("%s %q never arrived: %v", typ, body, err)
		}
		return ev
	}

	t.Run("a Claude session's message to NAME.HOST reaches the Qwen session there, from SENDER.ORIGIN", func(t *testing.T) {
		m := pair.Cross(ctx, t, "sink.c", "hello from a", 30*time.Second)
		if m.FromName != "alice.a" || m.Mode != message.ModePrompting || m.Auth != message.AuthPeer {
			t.Fatalf("sink got %+v", m)
		}
	})
	t.Run("a hold there reaches the Claude sender as held, then delivered when released", func(t *testing.T) {
		id, err := alice.Send(ctx, gateAlias, "hold me", message.ModePrompting)
		if err != nil {
			t.Fatal(err)
		}
		ev := arrived(t, gate, message.EventHeld, "hold me")
		if f := receipt(t, id); f.Status != claude.WireHeld {
			t.Fatalf("receipt = %+v, want held", f)
		}
		if err := gate.Decide(ctx, ev.Held.Message.ID, true, ""); err != nil {
			t.Fatal(err)
		}
		f, err := alice.WaitControl(ctx, func(f claude.Frame) bool { return f.OrigMsgID == id && f.Status != claude.WireHeld })
		if err != nil || f.Status != claude.WireDelivered {
			t.Fatalf("receipt = %+v, %v; want delivered", f, err)
		}
	})
	t.Run("a denial there reaches the Claude sender as denied", func(t *testing.T) {
		id, err := alice.Send(ctx, gateAlias, "deny me", message.ModePrompting)
		if err != nil {
			t.Fatal(err)
		}
		ev := arrived(t, gate, message.EventHeld, "deny me")
		receipt(t, id)
		if err := gate.Decide(ctx, ev.Held.Message.ID, false, ""); err != nil {
			t.Fatal(err)
		}
		f, err := alice.WaitControl(ctx, func(f claude.Frame) bool { return f.OrigMsgID == id && f.Status != claude.WireHeld })
		if err != nil || f.Status != claude.WireDenied {
			t.Fatalf("receipt = %+v, %v; want denied", f, err)
		}
	})
	t.Run("a refusal there reaches the Claude sender in Claude Code's words: expired, refused", func(t *testing.T) {
		id, err := alice.Send(ctx, claudeAlias(t, a.W.ConfigDir, "wall.c"), "refuse me", message.ModePrompting)
		if err != nil {
			t.Fatal(err)
		}
		if f := receipt(t, id); f.Status != claude.WireExpired || f.StatusDetail != claude.DetailRefused {
			t.Fatalf("receipt = %+v, want expired/refused", f)
		}
	})
	t.Run("a message that would pass the hop limit on the other host is dropped there and the Claude sender told", func(t *testing.T) {
		chain := make([]string, router.MaxForwardChain-1) // a's bridge adds the last allowed entry, c's would pass it
		for i := range chain {
			chain[i] = fmt.Sprintf("%024x", i+1)
		}
		id := uuid.NewString()
		env := claude.Envelope{From: alice.Address(), FromName: "alice", FromMode: "prompting", Body: "runaway", HopChain: chain}
		if err := alice.SendFrame(ctx, alias, claude.NewUserFrame(alice.Address(), id, env, nil)); err != nil {
			t.Fatal(err)
		}
		f := receipt(t, id)
		if f.Status != claude.WireDropped || f.DropReason != message.DropHopRunaway.String() {
			t.Fatalf("receipt = %+v, want dropped hop-runaway", f)
		}
	})
	t.Run("the Qwen session's answer to SENDER.ORIGIN comes back to the Claude sender from NAME.HOST", func(t *testing.T) {
		back := qwenListed(t, sink, "alice.a")
		id := uuid.NewString()
		if _, err := sink.Send(ctx, message.Message{ID: id, To: back.Address, ToSessionID: back.SessionID,
			Body: "answer from c", Mode: message.ModePrompting}); err != nil {
			t.Fatal(err)
		}
		r, err := alice.WaitReceived(ctx, func(r fakeclaude.Received) bool { return r.Content.Envelope.Body == "answer from c" })
		if err != nil {
			t.Fatal(err)
		}
		if r.Content.Envelope.FromName != "sink.c" || r.Frame.From != alias {
			t.Fatalf("alice got %+v from %s, want it from the sink.c alias %s", r.Content.Envelope, r.Frame.From, alias)
		}
		rev, err := sink.Wait(ctx, 30*time.Second, func(ev message.Event) bool { return ev.Type == message.EventReceipt && ev.Receipt.MsgID == id })
		if err != nil || rev.Receipt.Status != message.StatusDelivered {
			t.Fatalf("the qwen sender heard %+v, %v; want delivered", rev.Receipt, err)
		}
	})
	t.Run("a hold and a denial on the Claude side reach the Qwen sender on the other host", func(t *testing.T) {
		back := qwenListed(t, sink, "alice.a")
		id := uuid.NewString()
		if _, err := sink.Send(ctx, message.Message{ID: id, To: back.Address, ToSessionID: back.SessionID,
			Body: "bypass answer from c", Mode: message.ModeBypass}); err != nil {
			t.Fatal(err)
		}
		heard := func(not message.Status) message.Receipt {
			t.Helper()
			ev, err := sink.Wait(ctx, 30*time.Second, func(ev message.Event) bool {
				return ev.Type == message.EventReceipt && ev.Receipt.MsgID == id && ev.Receipt.Status != not
			})
			if err != nil {
				t.Fatalf("the qwen sender heard nothing: %v", err)
			}
			return *ev.Receipt
		}
		if rc := heard(message.StatusSent); rc.Status != message.StatusHeld {
			t.Fatalf("the qwen sender heard %+v, want held", rc)
		}
		r, err := alice.WaitReceived(ctx, func(r fakeclaude.Received) bool { return r.Content.Envelope.Body == "bypass answer from c" })
		if err != nil || !r.Held {
			t.Fatalf("alice got %+v, %v; want it held", r, err)
		}
		alice.Decide(ctx, r.Frame.MsgID, false)
		if rc := heard(message.StatusHeld); rc.Status != message.StatusDenied {
			t.Fatalf("the qwen sender heard %+v, want denied", rc)
		}
	})
	// Through the API, by either spelling: the name a local session sees
	// (NAME.HOST) and the address (NAME@HOST). Each receipt the receiver
	// (or its gateway) gives comes back to the API's sender.
	for _, spell := range []func(name string) string{
		func(name string) string { return name + ".c" },
		func(name string) string { return name + "@c" },
	} {
		t.Run("through the API to "+spell("NAME")+", every receipt comes back", func(t *testing.T) {
			tests := []struct {
				to, text string
				want     message.Status
			}{
				{"sink", "api hello " + spell(""), message.StatusDelivered},
				{"gate", "api hold " + spell(""), message.StatusHeld},
				{"wall", "api refused " + spell(""), message.StatusRefused},
				{"sink", "api hello " + spell(""), message.StatusDropped}, // the same body again: the receiver would drop it
			}
			for _, tt := range tests {
				out, err := a.G.Send(ctx, api.SendBody{To: spell(tt.to), Body: tt.text})
				if err != nil {
					t.Fatalf("send to %s: %v", spell(tt.to), err)
				}
				var got message.Status
				if !testutil.Within(20*time.Second, func() bool {
					o, err := a.G.Message(ctx, out.Message.ID)
					got = o.Status
					return err == nil && got == tt.want
				}) {
					t.Fatalf("send %q to %s: %v, want %v", tt.text, spell(tt.to), got, tt.want)
				}
			}
		})
	}
	t.Run("by NAME@HOST through the CLI", func(t *testing.T) {
		out, _, err := a.G.Run(t, "send", "sink@c", "cli hello", "--wait", "--json")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, `"delivered"`) {
			t.Fatalf("send printed %s", out)
		}
		arrived(t, sink, message.EventMessage, "cli hello")
	})
	t.Run("a gateway with no local leg reaches another host's session", func(t *testing.T) {
		out, err := b.G.Send(ctx, api.SendBody{To: "sink@c", Body: "from a runner", Wait: true, Timeout: "20s"})
		if err != nil || out.Status != message.StatusDelivered {
			t.Fatalf("send from b: %+v, %v; want delivered", out, err)
		}
		if ev := arrived(t, sink, message.EventMessage, "from a runner"); ev.Message.FromName != "b" {
			t.Fatalf("sink got %+v, want it from b", ev.Message)
		}
	})
	t.Run("no host shows another's aliases again", func(t *testing.T) {
		for _, h := range []*host{a, b, c} {
			ss, err := h.G.Sessions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ss {
				if strings.Count(s.Name, ".") > 1 || s.Protocol == message.ProtocolFederation && s.Host == h.Name {
					t.Errorf("%s lists %+v", h.Name, s)
				}
			}
		}
	})
}
