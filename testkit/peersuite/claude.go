package peersuite

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// GatewayName is the name the gateway under test registers.
const GatewayName = "gateway-it"

// ClaudeBackend starts the Claude Code sessions the suite talks to.
type ClaudeBackend interface {
	// Start starts one session named name in w.
	Start(t *testing.T, w *gatewaytest.World, name string) ClaudePeer
}

// ClaudePeer is one Claude Code session the gateway's Claude leg talks to.
type ClaudePeer interface {
	Name() string
	PID() int
	SessionID() string
	SocketPath() string
	// WaitTurn waits until the session has taken a message with body in
	// as a delivered turn and returns the envelope it got.
	WaitTurn(t *testing.T, body string) claude.Envelope
	// WaitHeld waits until the session holds the message id (with body)
	// for its person, and returns the sender's name it shows the person
	// and a func that denies the message as that person.
	WaitHeld(t *testing.T, id, body string) (fromName string, deny func())
}

// RunClaude starts a gateway and one session from b in a fresh World and
// runs every Claude check against them, in order.
func RunClaude(t *testing.T, b ClaudeBackend) {
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, GatewayName)
	p := b.Start(t, w, "work-it")
	for _, c := range claudeChecks {
		t.Run(c.name, func(t *testing.T) { c.run(t, g, p) })
	}
}

// checkResolves checks that each address resolves to the session at addr.
func checkResolves(t *testing.T, g *gatewaytest.Gateway, addr string, addresses ...string) {
	t.Helper()
	for _, a := range addresses {
		s, err := g.Resolve(testutil.Context(t, 10*time.Second), a)
		if err != nil {
			t.Errorf("resolve %q: %v", a, err)
			continue
		}
		if s.Address != addr {
			t.Errorf("resolve %q = %s, want %s", a, s.Address, addr)
		}
	}
}

// claudeChecks run in order against one peer and one gateway. A pending hold
// defers the real CLI's idle notices (interop's FINDINGS.md §4), and
// fakeclaude's: one check pins that.
var claudeChecks = []struct {
	name string
	run  func(t *testing.T, g *gatewaytest.Gateway, p ClaudePeer)
}{
	{"the gateway lists the session with its name and refs", func(t *testing.T, g *gatewaytest.Gateway, p ClaudePeer) {
		s := g.WaitListed(t, p.Name())
		addr := addressing.UDS(p.SocketPath())
		if s.Protocol != message.ProtocolClaude || !s.Reachable || s.Address != addr || s.PID != p.PID() ||
			s.SessionID != p.SessionID() || s.NativeRef != claudecli.Ref(p.SocketPath()) {
			t.Fatalf("listed %+v; want claude, reachable, at %s, pid %d, session %s, native ref %s",
				s, addr, p.PID(), p.SessionID(), claudecli.Ref(p.SocketPath()))
		}
		checkResolves(t, g, addr, p.Name(), "["+s.Ref+"]", s.Ref, p.Name()+" ["+s.NativeRef+"]")
	}},
	{"a prompting send is delivered as a turn with the gateway's name", func(t *testing.T, g *gatewaytest.Gateway, p ClaudePeer) {
		body := "peersuite-ping-" + uuid.NewString()[:8]
		o, code := g.SendJSON(t, p.Name(), body, "--mode", "prompting", "--wait", "--timeout", "20s")
		if code != 0 || o.Status != message.StatusDelivered {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		env := p.WaitTurn(t, body)
		if env.FromName != GatewayName || env.FromMode != "prompting" || !strings.HasPrefix(env.From, "uds:") {
			t.Fatalf("the session got envelope %+v; want from-name %q, from-mode prompting, a uds: from", env, GatewayName)
		}
	}},
	{"notify_when_idle yields an idle notice", func(t *testing.T, g *gatewaytest.Gateway, p ClaudePeer) {
		out, code, err := g.Run(t, "idle", p.Name(), "--wait", "--timeout", "60s", "--json")
		if err != nil || code != 0 {
			t.Fatalf("idle: exit %d, %v", code, err)
		}
		var res struct {
			Notice *message.IdleNotice `json:"notice"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Notice == nil {
			t.Fatalf("idle --json printed %q", out)
		}
		if res.Notice.State != "idle" || res.Notice.Peer != addressing.UDS(p.SocketPath()) {
			t.Fatalf("notice %+v; want idle from %s", res.Notice, addressing.UDS(p.SocketPath()))
		}
	}},
	{"a bypass send is held by the session until its person denies it", func(t *testing.T, g *gatewaytest.Gateway, p ClaudePeer) {
		body := "peersuite-bypass-" + uuid.NewString()[:8]
		// Held is not final, so --wait would sit out its whole timeout.
		o, code := g.SendJSON(t, p.Name(), body, "--mode", "bypass")
		if code != 0 {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		id := o.Message.ID
		g.WaitStatus(t, id, func(o router.Outbound) bool { return o.Status == message.StatusHeld })
		held := gatewaytest.LastReceipt(t, g.MessageState(t, id))
		if held.Status != message.StatusHeld || held.Reason == "" || held.From != addressing.UDS(p.SocketPath()) {
			t.Errorf("held receipt %+v; want the session's own, with its reason, from %s", held, addressing.UDS(p.SocketPath()))
		}
		from, deny := p.WaitHeld(t, id, body)
		if from != GatewayName {
			t.Errorf("the session shows the hold as from %q, want %q", from, GatewayName)
		}
		deny()
		g.WaitStatus(t, id, func(o router.Outbound) bool { return o.Status == message.StatusDenied })
	}},
	{"while a hold is pending, an idle notice waits for the decision", func(t *testing.T, g *gatewaytest.Gateway, p ClaudePeer) {
		body := "peersuite-hold-idle-" + uuid.NewString()[:8]
		o, code := g.SendJSON(t, p.Name(), body, "--mode", "bypass")
		if code != 0 {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		g.WaitStatus(t, o.Message.ID, func(o router.Outbound) bool { return o.Status == message.StatusHeld })
		_, deny := p.WaitHeld(t, o.Message.ID, body)
		if _, code, _ := g.Run(t, "idle", p.Name(), "--wait", "--timeout", "3s", "--json"); code != 4 {
			t.Fatalf("idle with a hold pending: exit %d, want 4 (no notice while the hold waits)", code)
		}
		deny()
		g.WaitStatus(t, o.Message.ID, func(o router.Outbound) bool { return o.Status == message.StatusDenied })
		// After a denial the real CLI answers at its next turn's end (or ~30 s
		// later on its own): run a turn rather than wait.
		turn := "peersuite-after-hold-" + uuid.NewString()[:8]
		if o, code := g.SendJSON(t, p.Name(), turn, "--mode", "prompting", "--wait", "--timeout", "20s"); code != 0 || o.Status != message.StatusDelivered {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		p.WaitTurn(t, turn)
		if out, code, err := g.Run(t, "idle", p.Name(), "--wait", "--timeout", "60s", "--json"); err != nil || code != 0 {
			t.Fatalf("idle once the hold was decided: exit %d (%v): %s", code, err, out)
		}
	}},
	{"a repeated body within 30 s is dropped duplicate", func(t *testing.T, g *gatewaytest.Gateway, p ClaudePeer) {
		body := "peersuite-dup-" + uuid.NewString()[:8]
		first, _ := g.SendJSON(t, p.Name(), body, "--wait", "--timeout", "20s")
		if first.Status != message.StatusDelivered {
			t.Fatalf("first send %+v", first)
		}
		o, _ := g.SendJSON(t, p.Name(), body, "--unpaced", "--wait", "--timeout", "20s")
		r := gatewaytest.LastReceipt(t, o)
		if o.Status != message.StatusDropped || r.DropReason != message.DropDuplicate || r.From != addressing.UDS(p.SocketPath()) {
			t.Fatalf("repeat: status %v, receipts %+v; want dropped duplicate from %s", o.Status, o.Receipts, addressing.UDS(p.SocketPath()))
		}
	}},
}
