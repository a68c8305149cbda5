package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

func startClaude(t *testing.T, w *gatewaytest.World, api *fakeanthropic.Server, name string) *claudecli.Session {
	t.Helper()
	return claudecli.Start(t, claudecli.Options{
		APIURL: api.URL(), Name: name, ConfigDir: w.ConfigDir, XDGRuntimeDir: w.Runtime,
	})
}

func TestABypassSendIsHeldAndTheRealReceiptsFollowTheDecision(t *testing.T) {
	for _, deliver := range []bool{true, false} {
		name := map[bool]string{true: "released by the person: held then delivered", false: "dropped by the person: held then denied"}[deliver]
		t.Run(name, func(t *testing.T) {
			needInterop(t)
			w := gatewaytest.NewWorld(t)
			api := fakeanthropic.Start(t, nil)
			s := startClaude(t, w, api, "work-it")
			g := gatewaytest.Start(t, w, "gateway-it")
			// Held is not final, so --wait would sit out its whole timeout:
			// poll for it instead.
			o, code := g.SendJSON(t, "work-it", "bypass hello", "--mode", "bypass")
			if code != 0 {
				t.Fatalf("exit %d, outbound %+v", code, o)
			}
			g.WaitStatus(t, o.Message.ID, func(o router.Outbound) bool { return o.Status == message.StatusHeld })
			o = g.MessageState(t, o.Message.ID)
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
				got := g.MessageState(t, o.Message.ID)
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

func TestARealSessionSendsToTheGatewayByName(t *testing.T) {
	needInterop(t)
	w := gatewaytest.NewWorld(t)
	trigger := "please-message-the-gateway"
	body := "hello from a real session " + uuid.NewString()[:8]
	in := fmt.Sprintf(`{"to":"gateway-it","message":%q}`, body)
	api := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(trigger, []fakeanthropic.Call{{Tool: "ListAgents", Input: `{}`}, {Tool: "SendMessage", Input: in}}, "sent")))
	g := gatewaytest.Start(t, w, "gateway-it")
	watch := g.WatchCLI(t)
	s := startClaude(t, w, api, "work-it")
	if err := s.SendUserTurn(trigger); err != nil {
		t.Fatal(err)
	}
	ev := watch.Wait(t, 90*time.Second, func(ev message.Event) bool {
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
	w := gatewaytest.NewWorld(t)
	api := fakeanthropic.Start(t, nil)
	s := startClaude(t, w, api, "work-it")
	g := gatewaytest.Start(t, w, "gateway-it")
	out, code, err := g.Run(t, "idle", "work-it", "--wait", "--timeout", "60s", "--json")
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

// startBypassSender starts a scripted real Claude session in the bypass review class
// whose model, on trigger, sends body to the gateway by name.
func startBypassSender(t *testing.T, w *gatewaytest.World, trigger, body string) (*claudecli.Session, *fakeanthropic.Server) {
	t.Helper()
	in := fmt.Sprintf(`{"to":"gateway-it","message":%q}`, body)
	model := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(trigger, []fakeanthropic.Call{{Tool: "SendMessage", Input: in}}, "sent")))
	s := claudecli.Start(t, claudecli.Options{
		APIURL: model.URL(), Name: "work-it", ConfigDir: w.ConfigDir, XDGRuntimeDir: w.Runtime,
		Args: []string{"--permission-mode", "bypassPermissions"}, Env: []string{"IS_SANDBOX=1"},
	})
	return s, model
}

// waitNotice waits for the real session to pass its model a
// [Cross-session delivery notice] containing want: the CLI accepted our
// receipt (auth line, from, orig_msg_id) and turned it into a turn. want
// must not occur in the SendMessage tool result, which promises a notice.
func waitNotice(t *testing.T, model *fakeanthropic.Server, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := model.WaitRequest(ctx, func(r fakeanthropic.Request) bool {
		txt := r.LastUser().Text()
		return strings.Contains(txt, "[Cross-session delivery notice]") && strings.Contains(txt, want)
	})
	if err != nil {
		t.Fatalf("the real session's model never saw a delivery notice with %q: %v", want, err)
	}
	return req.LastUser().Text()
}

// heldSend is a real bypass-class session whose scripted SendMessage to a
// prompting gateway was just held there.
type heldSend struct {
	g       *gatewaytest.Gateway
	watch   *gatewaytest.Watcher
	s       *claudecli.Session
	model   *fakeanthropic.Server
	trigger string
	held    message.Event
}

func heldByTheGateway(t *testing.T, prefix string) heldSend {
	t.Helper()
	needInterop(t)
	w := gatewaytest.NewWorld(t)
	h := heldSend{trigger: "please-message-the-gateway"}
	body := prefix + " " + uuid.NewString()[:8]
	h.g = gatewaytest.Start(t, w, "gateway-it")
	h.watch = h.g.WatchCLI(t)
	h.s, h.model = startBypassSender(t, w, h.trigger, body)
	if err := h.s.SendUserTurn(h.trigger); err != nil {
		t.Fatal(err)
	}
	h.held = h.watch.Wait(t, 90*time.Second, func(ev message.Event) bool {
		return ev.Type == message.EventHeld && ev.Held != nil && ev.Held.Message.Body == body
	})
	return h
}

// The gateway's own receipts reach a real Claude Code session: held, then
// denied, a repeat dropped as a duplicate, and refused by a gateway that
// refuses everything, each as the CLI's own delivery notice.
func TestTheGatewaysReceiptsReachARealClaudeSession(t *testing.T) {
	t.Run("held by a prompting gateway, then denied, then a repeat dropped as a duplicate", func(t *testing.T) {
		h := heldByTheGateway(t, "held hello")
		g, watch, s, model, trigger := h.g, h.watch, h.s, h.model, h.trigger
		id := h.held.Held.Message.ID
		held := h.held
		notice := waitNotice(t, model, "was held by that session")
		if !strings.Contains(notice, "msg_id: "+id) {
			t.Errorf("the held notice is not about %s: %s", id, notice)
		}
		if _, _, err := g.Run(t, "deny", held.Held.Message.ID); err != nil {
			t.Fatal(err)
		}
		notice = waitNotice(t, model, "was denied by the recipient user")
		if !strings.Contains(notice, "msg_id: "+id) {
			t.Errorf("the denied notice is not about %s: %s", id, notice)
		}
		// The same body again within 30 s: the gateway's guard drops it.
		if err := s.SendUserTurn(trigger); err != nil {
			t.Fatal(err)
		}
		drop := watch.Wait(t, 60*time.Second, func(ev message.Event) bool {
			return ev.Type == message.EventDrop && ev.Drop != nil && ev.Drop.Reason == message.DropDuplicate
		})
		notice = waitNotice(t, model, "dropped at that session's inbox")
		if !strings.Contains(notice, "msg_id: "+drop.Drop.MsgID) || !strings.Contains(notice, "it repeated your previous message") {
			t.Errorf("the dropped notice is not about the duplicate %s: %s", drop.Drop.MsgID, notice)
		}
	})
	t.Run("held by a prompting gateway, then released", func(t *testing.T) {
		h := heldByTheGateway(t, "released hello")
		g, model, held := h.g, h.model, h.held
		waitNotice(t, model, "was held by that session")
		if _, _, err := g.Run(t, "release", held.Held.Message.ID); err != nil {
			t.Fatal(err)
		}
		notice := waitNotice(t, model, "was approved and released to that session")
		if !strings.Contains(notice, "msg_id: "+held.Held.Message.ID) {
			t.Errorf("the released notice is not about %s: %s", held.Held.Message.ID, notice)
		}
	})
	t.Run("refused by a gateway that refuses inbound messages", func(t *testing.T) {
		needInterop(t)
		w := gatewaytest.NewWorld(t)
		trigger := "please-message-the-gateway"
		g := gatewaytest.Start(t, w, "gateway-it", "--inbound", "refuse")
		watch := g.WatchCLI(t)
		s, model := startBypassSender(t, w, trigger, "refused hello "+uuid.NewString()[:8])
		if err := s.SendUserTurn(trigger); err != nil {
			t.Fatal(err)
		}
		// Refused goes out as expired + status_detail "refused", which the
		// CLI reads as refused, not as an expired hold.
		drop := watch.Wait(t, 60*time.Second, func(ev message.Event) bool { return ev.Type == message.EventDrop && ev.Drop != nil })
		notice := waitNotice(t, model, "was refused")
		if !strings.Contains(notice, "msg_id: "+drop.Drop.MsgID) || !strings.Contains(notice, "not accepting cross-session messages") {
			t.Errorf("the refused notice is not about %s: %s", drop.Drop.MsgID, notice)
		}
	})
}

// A real session subscribes to the gateway's idle state on its own, with
// SendMessage's notify_when_idle, and gets the gateway's peer_idle_notice.
func TestARealSessionSubscribesToTheGatewaysIdleState(t *testing.T) {
	needInterop(t)
	w := gatewaytest.NewWorld(t)
	trigger := "please-watch-the-gateway"
	model := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(trigger, []fakeanthropic.Call{{Tool: "SendMessage", Input: `{"to":"gateway-it","notify_when_idle":true}`}}, "subscribed")))
	gatewaytest.Start(t, w, "gateway-it")
	s := startClaude(t, w, model, "work-it")
	if err := s.SendUserTurn(trigger); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The subscription is made only to a peer whose registry entry lists
	// the notify_idle feature; the tool result says it was made.
	if _, err := model.WaitContains(ctx, `Subscribed — you will get one notice here when \"gateway-it\" is next idle`); err != nil {
		t.Fatalf("the real SendMessage did not subscribe: %v", err)
	}
	// The gateway is idle, so it answers at once; the notice starts a turn.
	req, err := model.WaitRequest(ctx, func(r fakeanthropic.Request) bool {
		return strings.Contains(r.LastUser().Text(), `[Cross-session idle notice] "gateway-it", which you asked to be notified about, is idle now`)
	})
	if err != nil {
		t.Fatalf("the gateway's idle notice never reached the real session's model: %v", err)
	}
	t.Logf("notice: %s", req.LastUser().Text())
}
