package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/transport/uds/claude"
	"github.com/sessiongateway/gateway/transport/uds/qwen"
)

// The conformance suites: for each local leg, one set of test bodies that
// runs against our in-process fake (always) and against the real CLI (under
// GATEWAY_INTEROP=1), with the real gateway binary in between. A check that
// passes against the fake and fails against the real CLI shows where the
// fake, which is built from our own protocol code, has drifted from the peer.

// conformanceGateway is the name the gateway under test registers.
const conformanceGateway = "gateway-it"

// needGatewayBin builds the gateway when TestMain did not (without
// GATEWAY_INTEROP=1 it builds nothing), for the fake backends.
func needGatewayBin(t *testing.T) {
	t.Helper()
	if gatewayBin != "" {
		return
	}
	bin := filepath.Join(t.TempDir(), "gateway")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/sessiongateway/gateway/cmd/gateway").CombinedOutput()
	if err != nil {
		t.Fatalf("building the gateway: %v\n%s", err, out)
	}
	gatewayBin = bin
	t.Cleanup(func() { gatewayBin = "" })
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitListed waits until the gateway lists a session named name.
func waitListed(t *testing.T, g *gateway, name string) message.Session {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ss := g.sessions(t)
		if s, ok := findSession(ss, name); ok {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway never listed %q: %+v", name, ss)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lastReceipt is the newest receipt of o; the test fails when there is none.
func lastReceipt(t *testing.T, o router.Outbound) message.Receipt {
	t.Helper()
	if len(o.Receipts) == 0 {
		t.Fatalf("message %s has no receipt (status %v)", o.Message.ID, o.Status)
	}
	return o.Receipts[len(o.Receipts)-1]
}

// checkResolves checks that each address resolves to the session at addr.
func checkResolves(t *testing.T, g *gateway, addr string, addresses ...string) {
	t.Helper()
	c := apiClient(g)
	for _, a := range addresses {
		s, err := c.Resolve(ctxFor(t, 10*time.Second), a)
		if err != nil {
			t.Errorf("resolve %q: %v", a, err)
			continue
		}
		if s.Address != addr {
			t.Errorf("resolve %q = %s, want %s", a, s.Address, addr)
		}
	}
}

// ---- The Claude leg ----

// claudePeer is a Claude Code session the gateway's Claude leg talks to.
type claudePeer interface {
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

// claudeBackend starts one peer in a world; need, when set, skips or fails
// the backend before anything starts.
type claudeBackend struct {
	name  string
	need  func(t *testing.T)
	start func(t *testing.T, w *world, name string) claudePeer
}

var claudeBackends = []claudeBackend{
	{name: "fake", start: startFakeClaude},
	{name: "real", need: func(t *testing.T) { needInterop(t) }, start: startRealClaude},
}

type fakeClaudePeer struct{ *fakeclaude.Peer }

func startFakeClaude(t *testing.T, w *world, name string) claudePeer {
	return fakeClaudePeer{fakeclaude.Start(t, fakeclaude.Config{Name: name, ConfigDir: w.configDir, RuntimeDir: w.runtime})}
}

func (p fakeClaudePeer) SocketPath() string {
	path, _ := addressing.SocketOf(p.Address())
	return path
}

func (p fakeClaudePeer) WaitTurn(t *testing.T, body string) claude.Envelope {
	t.Helper()
	r, err := p.WaitReceived(ctxFor(t, 30*time.Second), func(r fakeclaude.Received) bool {
		return !r.Held && r.Content.Envelope.Body == body
	})
	if err != nil {
		t.Fatalf("the fake never took %q in: %v", body, err)
	}
	return r.Content.Envelope
}

func (p fakeClaudePeer) WaitHeld(t *testing.T, id, body string) (string, func()) {
	t.Helper()
	r, err := p.WaitReceived(ctxFor(t, 30*time.Second), func(r fakeclaude.Received) bool {
		return r.Held && r.Frame.MsgID == id
	})
	if err != nil {
		t.Fatalf("the fake never held %s: %v", id, err)
	}
	if r.Content.Envelope.Body != body {
		t.Errorf("the fake held %q, want %q", r.Content.Envelope.Body, body)
	}
	return r.Content.Envelope.FromName, func() { p.Decide(ctxFor(t, 10*time.Second), id, false) }
}

// realClaudePeer is a real `claude -p` stream-json session whose model is
// a loopback fake answering "ok".
type realClaudePeer struct {
	*claudecli.Session
	model   *fakeanthropic.Server
	decided map[string]bool // hold ids already decided, so each check finds its own
}

func startRealClaude(t *testing.T, w *world, name string) claudePeer {
	model := fakeanthropic.Start(t, nil)
	return realClaudePeer{startClaude(t, w, model, name), model, map[string]bool{}}
}

func (p realClaudePeer) WaitTurn(t *testing.T, body string) claude.Envelope {
	t.Helper()
	req, err := p.model.WaitContains(ctxFor(t, 60*time.Second), body)
	if err != nil {
		t.Fatalf("the real session never started a turn with %q: %v", body, err)
	}
	env, err := envelopeAround(req.LastUser().Text(), body)
	if err != nil {
		t.Fatalf("the turn's text has no envelope around %q (%v): %s", body, err, req.LastUser().Text())
	}
	return env
}

func (p realClaudePeer) WaitHeld(t *testing.T, _, _ string) (string, func()) {
	t.Helper()
	// The stream-json hold event names neither the frame's msg_id nor its
	// body; the checks hold one message at a time, so the first hold not yet
	// decided is this one.
	h, err := p.WaitHold(ctxFor(t, 30*time.Second), func(h claudecli.Hold) bool { return h.State == "held" && !p.decided[h.HoldID] })
	if err != nil {
		t.Fatalf("the real session never reported a hold: %v", err)
	}
	p.decided[h.HoldID] = true
	return h.FromName, func() {
		if _, err := p.DecideHold(ctxFor(t, 30*time.Second), h.HoldID, false); err != nil {
			t.Fatal(err)
		}
	}
}

// envelopeAround parses the <cross-session-message> element whose body
// holds body out of a turn's text.
func envelopeAround(text, body string) (claude.Envelope, error) {
	const open, end = "<cross-session-message", "</cross-session-message>"
	i := strings.Index(text, body)
	if i < 0 {
		return claude.Envelope{}, claude.ErrNotEnvelope
	}
	start := strings.LastIndex(text[:i], open)
	stop := strings.Index(text[i:], end)
	if start < 0 || stop < 0 {
		return claude.Envelope{}, claude.ErrNotEnvelope
	}
	return claude.ParseEnvelope(text[start : i+stop+len(end)])
}

// claudeChecks run in order against one peer and one gateway. A pending
// hold defers the real CLI's idle notices (FINDINGS.md §4), and fakeclaude's:
// one check pins that.
var claudeChecks = []struct {
	name string
	run  func(t *testing.T, g *gateway, p claudePeer)
}{
	{"the gateway lists the session with its name and refs", func(t *testing.T, g *gateway, p claudePeer) {
		s := waitListed(t, g, p.Name())
		addr := addressing.UDS(p.SocketPath())
		if s.Protocol != message.ProtocolClaude || !s.Reachable || s.Address != addr || s.PID != p.PID() ||
			s.SessionID != p.SessionID() || s.NativeRef != claudecli.Ref(p.SocketPath()) {
			t.Fatalf("listed %+v; want claude, reachable, at %s, pid %d, session %s, native ref %s",
				s, addr, p.PID(), p.SessionID(), claudecli.Ref(p.SocketPath()))
		}
		checkResolves(t, g, addr, p.Name(), "["+s.Ref+"]", s.Ref, p.Name()+" ["+s.NativeRef+"]")
	}},
	{"a prompting send is delivered as a turn with the gateway's name", func(t *testing.T, g *gateway, p claudePeer) {
		body := "conformance-ping-" + uuid.NewString()[:8]
		o, code := sendJSON(t, g, p.Name(), body, "--mode", "prompting", "--wait", "--timeout", "20s")
		if code != 0 || o.Status != message.StatusDelivered {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		env := p.WaitTurn(t, body)
		if env.FromName != conformanceGateway || env.FromMode != "prompting" || !strings.HasPrefix(env.From, "uds:") {
			t.Fatalf("the session got envelope %+v; want from-name %q, from-mode prompting, a uds: from", env, conformanceGateway)
		}
	}},
	{"notify_when_idle yields an idle notice", func(t *testing.T, g *gateway, p claudePeer) {
		out, code, err := g.run(t, "idle", p.Name(), "--wait", "--timeout", "60s", "--json")
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
	{"a bypass send is held by the session until its person denies it", func(t *testing.T, g *gateway, p claudePeer) {
		body := "conformance-bypass-" + uuid.NewString()[:8]
		// Held is not final, so --wait would sit out its whole timeout.
		o, code := sendJSON(t, g, p.Name(), body, "--mode", "bypass")
		if code != 0 {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		id := o.Message.ID
		waitStatus(t, g, id, func(o router.Outbound) bool { return o.Status == message.StatusHeld })
		held := lastReceipt(t, messageState(t, g, id))
		if held.Status != message.StatusHeld || held.Reason == "" || held.From != addressing.UDS(p.SocketPath()) {
			t.Errorf("held receipt %+v; want the session's own, with its reason, from %s", held, addressing.UDS(p.SocketPath()))
		}
		from, deny := p.WaitHeld(t, id, body)
		if from != conformanceGateway {
			t.Errorf("the session shows the hold as from %q, want %q", from, conformanceGateway)
		}
		deny()
		waitStatus(t, g, id, func(o router.Outbound) bool { return o.Status == message.StatusDenied })
	}},
	{"while a hold is pending, an idle notice waits for the decision", func(t *testing.T, g *gateway, p claudePeer) {
		body := "conformance-hold-idle-" + uuid.NewString()[:8]
		o, code := sendJSON(t, g, p.Name(), body, "--mode", "bypass")
		if code != 0 {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		waitStatus(t, g, o.Message.ID, func(o router.Outbound) bool { return o.Status == message.StatusHeld })
		_, deny := p.WaitHeld(t, o.Message.ID, body)
		if _, code, _ := g.run(t, "idle", p.Name(), "--wait", "--timeout", "3s", "--json"); code != 4 {
			t.Fatalf("idle with a hold pending: exit %d, want 4 (no notice while the hold waits)", code)
		}
		deny()
		waitStatus(t, g, o.Message.ID, func(o router.Outbound) bool { return o.Status == message.StatusDenied })
		// After a denial the real CLI answers at its next turn's end (or ~30 s
		// later on its own): run a turn rather than wait.
		turn := "conformance-after-hold-" + uuid.NewString()[:8]
		if o, code := sendJSON(t, g, p.Name(), turn, "--mode", "prompting", "--wait", "--timeout", "20s"); code != 0 || o.Status != message.StatusDelivered {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		p.WaitTurn(t, turn)
		if out, code, err := g.run(t, "idle", p.Name(), "--wait", "--timeout", "60s", "--json"); err != nil || code != 0 {
			t.Fatalf("idle once the hold was decided: exit %d (%v): %s", code, err, out)
		}
	}},
	{"a repeated body within 30 s is dropped duplicate", func(t *testing.T, g *gateway, p claudePeer) {
		body := "conformance-dup-" + uuid.NewString()[:8]
		first, _ := sendJSON(t, g, p.Name(), body, "--wait", "--timeout", "20s")
		if first.Status != message.StatusDelivered {
			t.Fatalf("first send %+v", first)
		}
		o, _ := sendJSON(t, g, p.Name(), body, "--unpaced", "--wait", "--timeout", "20s")
		r := lastReceipt(t, o)
		if o.Status != message.StatusDropped || r.DropReason != "duplicate" || r.From != addressing.UDS(p.SocketPath()) {
			t.Fatalf("repeat: status %v, receipts %+v; want dropped duplicate from %s", o.Status, o.Receipts, addressing.UDS(p.SocketPath()))
		}
	}},
}

func TestClaudeLegConformance(t *testing.T) {
	needGatewayBin(t)
	for _, b := range claudeBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.need != nil {
				b.need(t)
			}
			w := newWorld(t)
			g := startGateway(t, w, conformanceGateway)
			p := b.start(t, w, "work-it")
			for _, c := range claudeChecks {
				t.Run(c.name, func(t *testing.T) { c.run(t, g, p) })
			}
		})
	}
}

// ---- The Qwen leg ----

// qwenPeer is a Qwen Code session the gateway's Qwen leg talks to.
type qwenPeer interface {
	Name() string
	SessionID() string
	// Inbox is the session's inbox socket and the token it takes.
	Inbox() (path string, token qwen.Token)
	// WaitMessage waits until a message with body reached the session
	// and returns the sender's name it shows.
	WaitMessage(t *testing.T, body string) (fromName string)
	// WaitHeld waits until the session holds a message with body for its
	// person.
	WaitHeld(t *testing.T, body string)
}

type qwenBackend struct {
	name  string
	need  func(t *testing.T)
	start func(t *testing.T, w *world) qwenPeer
}

var qwenBackends = []qwenBackend{
	{name: "fake", start: startFakeQwen},
	{name: "real", need: func(t *testing.T) { needQwen(t) }, start: startRealQwen},
}

type fakeQwenPeer struct {
	*fakeqwen.Peer
	name  string
	token qwen.Token
}

func startFakeQwen(t *testing.T, w *world) qwenPeer {
	const name = "work-it"
	p := fakeqwen.Start(t, fakeqwen.Config{Name: name, Home: w.qwenHome, RuntimeDir: w.runtime})
	// The token is in the record only, as a real session's is.
	b, err := os.ReadFile(p.RecordPath())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := qwen.ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	return fakeQwenPeer{p, name, rec.IPCToken}
}

func (p fakeQwenPeer) Name() string                { return p.name }
func (p fakeQwenPeer) Inbox() (string, qwen.Token) { return p.SocketPath(), p.token }

func (p fakeQwenPeer) WaitMessage(t *testing.T, body string) string {
	t.Helper()
	ev, err := p.Wait(ctxFor(t, 30*time.Second), 30*time.Second, func(ev message.Event) bool {
		return ev.Type == message.EventMessage && ev.Message != nil && ev.Message.Body == body
	})
	if err != nil {
		t.Fatalf("the fake never got %q: %v", body, err)
	}
	return ev.Message.FromName
}

func (p fakeQwenPeer) WaitHeld(t *testing.T, body string) {
	t.Helper()
	if _, err := p.Wait(ctxFor(t, 30*time.Second), 30*time.Second, func(ev message.Event) bool {
		return ev.Type == message.EventHeld && ev.Held != nil && ev.Held.Message.Body == body
	}); err != nil {
		t.Fatalf("the fake never held %q: %v", body, err)
	}
}

// realQwenPeer is a real Qwen Code TUI in the default (prompting) approval
// mode whose model is a loopback fake answering "ok".
type realQwenPeer struct {
	*qwencli.Session
	model *fakeopenai.Server
}

func startRealQwen(t *testing.T, w *world) qwenPeer {
	model := fakeopenai.Start(t, nil)
	return realQwenPeer{startQwenTUI(t, w, model, qwencli.ModeDefault), model}
}

func (p realQwenPeer) Inbox() (string, qwen.Token) {
	return p.IPCPath(), qwen.Token(string(p.IPCToken()))
}

func (p realQwenPeer) WaitMessage(t *testing.T, body string) string {
	t.Helper()
	req, err := p.model.WaitContains(ctxFor(t, 60*time.Second), body)
	if err != nil {
		t.Fatalf("the real session never passed %q to its model: %v", body, err)
	}
	// <cross_session_message from="<inbox>" name="<sender>">\n<body>
	text := req.LastUser().Text()
	i := strings.Index(text, ">\n"+body)
	start := strings.LastIndex(text[:max(i, 0)], "<cross_session_message ")
	if i < 0 || start < 0 {
		t.Fatalf("the model's text has no envelope around %q: %s", body, text)
	}
	_, after, ok := strings.Cut(text[start:i], ` name="`)
	name, _, ok2 := strings.Cut(after, `"`)
	if !ok || !ok2 {
		t.Fatalf("the envelope shows no name: %s", text[start:i])
	}
	return name
}

func (p realQwenPeer) WaitHeld(t *testing.T, _ string) {
	t.Helper()
	waitScreen(t, p.Session, "Held a message from another session")
}

func inboxAddr(p qwenPeer) string {
	path, _ := p.Inbox()
	return addressing.UDS(path)
}

var qwenChecks = []struct {
	name string
	run  func(t *testing.T, w *world, g *gateway, p qwenPeer)
}{
	{"the gateway lists the session with its name and ref", func(t *testing.T, _ *world, g *gateway, p qwenPeer) {
		s := waitListed(t, g, p.Name())
		if s.Protocol != message.ProtocolQwen || !s.Reachable || s.Address != inboxAddr(p) ||
			s.SessionID != p.SessionID() || s.Ref != qwencli.Ref(p.SessionID()) {
			t.Fatalf("listed %+v; want qwen, reachable, at %s, session %s, ref %s",
				s, inboxAddr(p), p.SessionID(), qwencli.Ref(p.SessionID()))
		}
		checkResolves(t, g, inboxAddr(p), p.Name(), "["+s.Ref+"]", s.Ref, p.Name()+" ["+s.Ref+"]")
	}},
	{"a prompting send is delivered with the session's delivered receipt", func(t *testing.T, _ *world, g *gateway, p qwenPeer) {
		body := "conformance-ping-" + uuid.NewString()[:8]
		o, code := sendJSON(t, g, p.Name(), body, "--mode", "prompting", "--wait", "--timeout", "30s")
		if r := lastReceipt(t, o); code != 0 || o.Status != message.StatusDelivered || r.Status != message.StatusDelivered || r.From != inboxAddr(p) {
			t.Fatalf("exit %d, status %v, receipts %+v; want the session's delivered receipt from %s", code, o.Status, o.Receipts, inboxAddr(p))
		}
		if from := p.WaitMessage(t, body); from != conformanceGateway {
			t.Fatalf("the session shows the message as from %q, want %q", from, conformanceGateway)
		}
	}},
	{"a bypass send is held", func(t *testing.T, _ *world, g *gateway, p qwenPeer) {
		body := "conformance-bypass-" + uuid.NewString()[:8]
		o, code := sendJSON(t, g, p.Name(), body, "--mode", "bypass")
		if code != 0 {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		waitStatus(t, g, o.Message.ID, func(o router.Outbound) bool { return o.Status == message.StatusHeld })
		if r := lastReceipt(t, messageState(t, g, o.Message.ID)); r.Status != message.StatusHeld || r.From != inboxAddr(p) {
			t.Errorf("held receipt %+v; want the session's own from %s", r, inboxAddr(p))
		}
		p.WaitHeld(t, body)
	}},
	{"a stale toSessionId is answered misaddressed", func(t *testing.T, w *world, g *gateway, p qwenPeer) {
		path, token := p.Inbox()
		writeGhost(t, w, "ghost", path, token)
		o, _ := sendJSON(t, g, "ghost", "to nobody "+uuid.NewString()[:8], "--unpaced", "--wait", "--timeout", "20s")
		if r := lastReceipt(t, o); o.Status != message.StatusMisaddressed || r.From != inboxAddr(p) {
			t.Fatalf("status %v, receipts %+v; want misaddressed from %s", o.Status, o.Receipts, inboxAddr(p))
		}
	}},
	{"a repeated body within 30 s sent --unpaced is dropped duplicate", func(t *testing.T, _ *world, g *gateway, p qwenPeer) {
		body := "conformance-dup-" + uuid.NewString()[:8]
		first, _ := sendJSON(t, g, p.Name(), body, "--wait", "--timeout", "30s")
		if first.Status != message.StatusDelivered {
			t.Fatalf("first send %+v", first)
		}
		o, _ := sendJSON(t, g, p.Name(), body, "--unpaced", "--wait", "--timeout", "20s")
		if r := lastReceipt(t, o); o.Status != message.StatusDropped || r.DropReason != "duplicate" || r.From != inboxAddr(p) {
			t.Fatalf("status %v, receipts %+v; want dropped duplicate from %s", o.Status, o.Receipts, inboxAddr(p))
		}
	}},
}

func TestQwenLegConformance(t *testing.T) {
	needGatewayBin(t)
	for _, b := range qwenBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.need != nil {
				b.need(t)
			}
			w := newWorld(t)
			g := startGateway(t, w, conformanceGateway)
			p := b.start(t, w)
			for _, c := range qwenChecks {
				t.Run(c.name, func(t *testing.T) { c.run(t, w, g, p) })
			}
		})
	}
}
