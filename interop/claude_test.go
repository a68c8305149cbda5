package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
)

func startClaude(t *testing.T, w *world, api *fakeanthropic.Server, name string) *claudecli.Session {
	t.Helper()
	return claudecli.Start(t, claudecli.Options{
		APIURL: api.URL(), Name: name, ConfigDir: w.configDir, XDGRuntimeDir: w.runtime,
	})
}

func findSession(ss []message.Session, name string) (message.Session, bool) {
	for _, s := range ss {
		if s.Name == name {
			return s, true
		}
	}
	return message.Session{}, false
}

func sendJSON(t *testing.T, g *gateway, args ...string) (router.Outbound, int) {
	t.Helper()
	out, code, err := g.run(t, append([]string{"send", "--json"}, args...)...)
	if err != nil && code != 3 && code != 4 {
		t.Fatal(err)
	}
	var o router.Outbound
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("send --json printed %q: %v", out, err)
	}
	return o, code
}

func TestTheGatewayListsARealSession(t *testing.T) {
	needInterop(t)
	w := newWorld(t)
	api := fakeanthropic.Start(t, nil)
	s := startClaude(t, w, api, "work-it")
	g := startGateway(t, w, "gateway-it")
	got, ok := findSession(g.sessions(t), "work-it")
	if !ok {
		t.Fatalf("work-it missing from %+v", g.sessions(t))
	}
	if got.PID != s.PID() || got.Address != "uds:"+s.SocketPath() || got.SessionID != s.SessionID() ||
		got.NativeRef != claudecli.Ref(s.SocketPath()) || got.Protocol != message.ProtocolClaude || !got.Reachable {
		t.Fatalf("session = %+v; real pid %d socket %s id %s", got, s.PID(), s.SocketPath(), s.SessionID())
	}
}

func TestAPromptingSendIsDeliveredIntoATurn(t *testing.T) {
	needInterop(t)
	w := newWorld(t)
	api := fakeanthropic.Start(t, nil)
	startClaude(t, w, api, "work-it")
	g := startGateway(t, w, "gateway-it")
	nonce := "interop-ping-" + uuid.NewString()[:8]
	o, code := sendJSON(t, g, "work-it", nonce, "--mode", "prompting", "--wait", "--timeout", "20s")
	if code != 0 || o.Status != message.StatusDelivered {
		t.Fatalf("exit %d, outbound %+v", code, o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := api.WaitContains(ctx, nonce)
	if err != nil {
		t.Fatalf("the real session never started a turn with the message: %v", err)
	}
	if !strings.Contains(req.Text(), `from-name="gateway-it"`) {
		t.Errorf("the turn does not show the gateway's name: %s", req.Text())
	}
}

func TestABypassSendIsHeldAndTheRealReceiptsFollowTheDecision(t *testing.T) {
	for _, deliver := range []bool{true, false} {
		name := map[bool]string{true: "released by the person: held then delivered", false: "dropped by the person: held then denied"}[deliver]
		t.Run(name, func(t *testing.T) {
			needInterop(t)
			w := newWorld(t)
			api := fakeanthropic.Start(t, nil)
			s := startClaude(t, w, api, "work-it")
			g := startGateway(t, w, "gateway-it")
			o, code := sendJSON(t, g, "work-it", "bypass hello", "--mode", "bypass", "--wait", "--timeout", "10s")
			if code != 4 || o.Status != message.StatusHeld {
				t.Fatalf("exit %d, outbound %+v; want held (not final, exit 4)", code, o)
			}
			held := o.Receipts[len(o.Receipts)-1]
			if held.Reason == "" || !strings.HasPrefix(held.From, "uds:") {
				t.Errorf("held receipt = %+v, want the real CLI's reason and address", held)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			h, err := s.WaitHold(ctx, func(h claudecli.Hold) bool { return h.State == "held" })
			if err != nil {
				t.Fatal(err)
			}
			if h.FromName != "gateway-it" {
				t.Errorf("the real session shows the hold from %q", h.FromName)
			}
			if _, err := s.DecideHold(ctx, h.HoldID, deliver); err != nil {
				t.Fatal(err)
			}
			want := message.StatusDenied
			if deliver {
				want = message.StatusDelivered
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				got := messageState(t, g, o.Message.ID)
				if got.Status == want {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("status = %v, want %v; receipts %+v", got.Status, want, got.Receipts)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// messageState reads a sent message's state through the control API.
func messageState(t *testing.T, g *gateway, id string) router.Outbound {
	t.Helper()
	c := apiClient(g)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := c.Message(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestARealSessionSendsToTheGatewayByName(t *testing.T) {
	needInterop(t)
	w := newWorld(t)
	trigger := "please-message-the-gateway"
	body := "hello from a real session " + uuid.NewString()[:8]
	in := fmt.Sprintf(`{"to":"gateway-it","message":%q}`, body)
	api := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(trigger, []fakeanthropic.Call{{Tool: "ListAgents", Input: `{}`}, {Tool: "SendMessage", Input: in}}, "sent")))
	g := startGateway(t, w, "gateway-it")
	watch := g.watch(t)
	s := startClaude(t, w, api, "work-it")
	if err := s.SendUserTurn(trigger); err != nil {
		t.Fatal(err)
	}
	ev := watch.wait(t, 90*time.Second, func(ev message.Event) bool {
		return ev.Type == message.EventMessage && ev.Message != nil && ev.Message.Body == body
	})
	m := ev.Message
	if m.FromName != "work-it" || m.From != "uds:"+s.SocketPath() || !m.Attested || m.Auth != message.AuthPeer {
		t.Fatalf("message = %+v; want from work-it at %s, attested, authenticated with our peer token", m, s.SocketPath())
	}
	// The real roster accepted the gateway's registry entry and key file:
	// its ListAgents result names it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := api.WaitContains(ctx, "gateway-it ["); err != nil {
		t.Errorf("ListAgents did not list the gateway: %v", err)
	}
}

func TestNotifyWhenIdleYieldsAnIdleEvent(t *testing.T) {
	needInterop(t)
	w := newWorld(t)
	api := fakeanthropic.Start(t, nil)
	s := startClaude(t, w, api, "work-it")
	g := startGateway(t, w, "gateway-it")
	out, code, err := g.run(t, "idle", "work-it", "--wait", "--timeout", "60s", "--json")
	if err != nil || code != 0 {
		t.Fatalf("idle: exit %d, %v", code, err)
	}
	var res struct {
		Notice *message.IdleNotice `json:"notice"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Notice == nil {
		t.Fatalf("idle --json printed %q", out)
	}
	if res.Notice.State != "idle" || res.Notice.Peer != "uds:"+s.SocketPath() {
		t.Fatalf("notice = %+v", res.Notice)
	}
}

func TestShutdownLeavesNoRegistration(t *testing.T) {
	needInterop(t)
	w := newWorld(t)
	g := startGateway(t, w, "gateway-it")
	files, _ := filepath.Glob(filepath.Join(w.configDir, "sessions", "*"))
	if len(files) != 2 {
		t.Fatalf("registration files = %v", files)
	}
	g.stop(t)
	files, _ = filepath.Glob(filepath.Join(w.configDir, "sessions", "*"))
	socks, _ := filepath.Glob(filepath.Join(w.runtime, "cc-socks", "*"))
	if len(files) != 0 || len(socks) != 0 {
		t.Fatalf("left behind: %v %v", files, socks)
	}
	if _, err := os.Stat(filepath.Join(w.stateDir, "gateway.sock")); err == nil {
		t.Fatal("control socket left behind")
	}
}
