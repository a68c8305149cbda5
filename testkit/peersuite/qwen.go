package peersuite

import (
	"testing"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// QwenBackend starts the Qwen Code sessions the suite talks to.
type QwenBackend interface {
	// Start starts one session named "work-it" in w.
	Start(t *testing.T, w *gatewaytest.World) QwenPeer
}

// QwenPeer is one Qwen Code session the gateway's Qwen leg talks to.
type QwenPeer interface {
	Name() string
	SessionID() string
	// PID is the session's process, the one its records name.
	PID() int
	// Inbox is the session's inbox socket and the token it takes.
	Inbox() (path string, token qwen.Token)
	// WaitMessage waits until a message with body reached the session
	// and returns the sender's name it shows.
	WaitMessage(t *testing.T, body string) (fromName string)
	// WaitHeld waits until the session holds a message with body for its
	// person.
	WaitHeld(t *testing.T, body string)
}

// RunQwen starts a gateway and one session from b in a fresh World and
// runs every Qwen check against them, in order.
func RunQwen(t *testing.T, b QwenBackend) {
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, GatewayName)
	p := b.Start(t, w)
	for _, c := range qwenChecks {
		t.Run(c.name, func(t *testing.T) { c.run(t, w, g, p) })
	}
}

func inboxAddr(p QwenPeer) string {
	path, _ := p.Inbox()
	return addressing.UDS(path)
}

var qwenChecks = []struct {
	name string
	run  func(t *testing.T, w *gatewaytest.World, g *gatewaytest.Gateway, p QwenPeer)
}{
	{"the gateway lists the session with its name and ref", func(t *testing.T, _ *gatewaytest.World, g *gatewaytest.Gateway, p QwenPeer) {
		s := g.WaitListed(t, p.Name())
		if s.Protocol != message.ProtocolQwen || !s.Reachable || s.Address != inboxAddr(p) ||
			s.SessionID != p.SessionID() || s.Ref != qwencli.Ref(p.SessionID()) {
			t.Fatalf("listed %+v; want qwen, reachable, at %s, session %s, ref %s",
				s, inboxAddr(p), p.SessionID(), qwencli.Ref(p.SessionID()))
		}
		checkResolves(t, g, inboxAddr(p), p.Name(), "["+s.Ref+"]", s.Ref, p.Name()+" ["+s.Ref+"]")
	}},
	{"a prompting send is delivered with the session's delivered receipt", func(t *testing.T, _ *gatewaytest.World, g *gatewaytest.Gateway, p QwenPeer) {
		body := "peersuite-ping-" + uuid.NewString()[:8]
		o, code := g.SendJSON(t, p.Name(), body, "--mode", "prompting", "--wait", "--timeout", "30s")
		if r := gatewaytest.LastReceipt(t, o); code != 0 || o.Status != message.StatusDelivered || r.Status != message.StatusDelivered || r.From != inboxAddr(p) {
			t.Fatalf("exit %d, status %v, receipts %+v; want the session's delivered receipt from %s", code, o.Status, o.Receipts, inboxAddr(p))
		}
		if from := p.WaitMessage(t, body); from != GatewayName {
			t.Fatalf("the session shows the message as from %q, want %q", from, GatewayName)
		}
	}},
	{"a bypass send is held", func(t *testing.T, _ *gatewaytest.World, g *gatewaytest.Gateway, p QwenPeer) {
		body := "peersuite-bypass-" + uuid.NewString()[:8]
		o, code := g.SendJSON(t, p.Name(), body, "--mode", "bypass")
		if code != 0 {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		g.WaitStatus(t, o.Message.ID, func(o router.Outbound) bool { return o.Status == message.StatusHeld })
		if r := gatewaytest.LastReceipt(t, g.MessageState(t, o.Message.ID)); r.Status != message.StatusHeld || r.From != inboxAddr(p) {
			t.Errorf("held receipt %+v; want the session's own from %s", r, inboxAddr(p))
		}
		p.WaitHeld(t, body)
	}},
	{"a stale toSessionId is answered misaddressed", func(t *testing.T, w *gatewaytest.World, g *gatewaytest.Gateway, p QwenPeer) {
		path, token := p.Inbox()
		WriteQwenGhost(t, w, "ghost", p.PID(), path, token)
		o, _ := g.SendJSON(t, "ghost", "to nobody "+uuid.NewString()[:8], "--unpaced", "--wait", "--timeout", "20s")
		if r := gatewaytest.LastReceipt(t, o); o.Status != message.StatusMisaddressed || r.From != inboxAddr(p) {
			t.Fatalf("status %v, receipts %+v; want misaddressed from %s", o.Status, o.Receipts, inboxAddr(p))
		}
	}},
	{"a repeated body within 30 s sent --unpaced is dropped duplicate", func(t *testing.T, _ *gatewaytest.World, g *gatewaytest.Gateway, p QwenPeer) {
		body := "peersuite-dup-" + uuid.NewString()[:8]
		first, _ := g.SendJSON(t, p.Name(), body, "--wait", "--timeout", "30s")
		if first.Status != message.StatusDelivered {
			t.Fatalf("first send %+v", first)
		}
		o, _ := g.SendJSON(t, p.Name(), body, "--unpaced", "--wait", "--timeout", "20s")
		if r := gatewaytest.LastReceipt(t, o); o.Status != message.StatusDropped || r.DropReason != message.DropDuplicate || r.From != inboxAddr(p) {
			t.Fatalf("status %v, receipts %+v; want dropped duplicate from %s", o.Status, o.Receipts, inboxAddr(p))
		}
	}},
}
