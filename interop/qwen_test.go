package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
	"github.com/sessiongateway/gateway/transport/uds"
	"github.com/sessiongateway/gateway/transport/uds/qwen"
)

// writeGhostRecord publishes a live record (the test process's) named
// "ghost" that points at s's inbox under another session id, as a record
// left stale by /clear would: a send to it is misaddressed.
func writeGhostRecord(t *testing.T, w *world, s *qwencli.Session) string {
	t.Helper()
	pid := os.Getpid()
	procStart, ok := qwen.ProcStartToken(pid)
	if !ok {
		t.Fatal("no procStart for the test process")
	}
	ns, err := uds.PidNamespace(pid)
	if err != nil {
		t.Fatal(err)
	}
	rec := qwen.Record{PID: pid, ProcStart: procStart, PidNS: ns, SessionID: uuid.NewString(), Cwd: "/",
		Name: "ghost", StartedAt: time.Now().UnixMilli(), Kind: "external", IPCPath: s.IPCPath(), IPCToken: qwen.Token(string(s.IPCToken()))}
	b, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(qwen.SessionsDir(w.qwenHome), qwen.RecordFileName(pid, qwen.NewSuffix()))
	if err := uds.WriteFileAtomic(path, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	return "ghost"
}

// needQwen fails when the real Qwen Code CLI is missing or of another
// version (after needInterop's skip without GATEWAY_INTEROP=1).
func needQwen(t *testing.T) string {
	t.Helper()
	needInterop(t)
	bin, err := qwencli.Bin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := qwencli.CheckVersion(ctx, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func startEndpoint(t *testing.T, w *world, name string) *qwencli.Endpoint {
	t.Helper()
	return qwencli.StartEndpoint(t, qwencli.EndpointOptions{Name: name, QwenHome: w.qwenHome, XDGRuntimeDir: w.runtime})
}

func startQwenTUI(t *testing.T, w *world, model *fakeopenai.Server, mode string) *qwencli.Session {
	t.Helper()
	return qwencli.Start(t, qwencli.Options{APIURL: model.URL() + "/v1", QwenHome: w.qwenHome, XDGRuntimeDir: w.runtime, ApprovalMode: mode})
}

func TestTheGatewaysRecordShowsInQwenSessionsPs(t *testing.T) {
	bin := needQwen(t)
	w := newWorld(t)
	startGateway(t, w, "gateway-it")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recs, raw, err := qwencli.ListSessions(ctx, bin, w.qwenHome)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Name == "gateway-it" && r.Kind == "external" {
			return
		}
	}
	t.Fatalf("qwen sessions ps did not list the gateway:\n%s", raw)
}

func TestMessagesBothWaysWithTheQwenSDK(t *testing.T) {
	needQwen(t)
	w := newWorld(t)
	g := startGateway(t, w, "gateway-it")
	ep := startEndpoint(t, w, "sdk-peer")
	t.Run("the gateway sends to an SDK endpoint by name and gets delivered", func(t *testing.T) {
		body := "to the sdk " + uuid.NewString()[:8]
		o, code := sendJSON(t, g, "sdk-peer", body, "--wait", "--timeout", "20s")
		if code != 0 || o.Status != message.StatusDelivered {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m, err := ep.WaitMessage(ctx, func(m qwencli.InboundMessage) bool { return m.Content == body })
		if err != nil {
			t.Fatal(err)
		}
		if m.FromName != "gateway-it" || m.FromMode != "prompting" {
			t.Fatalf("the SDK got %+v", m)
		}
	})
	t.Run("an SDK endpoint sends to the gateway by name and gets delivered", func(t *testing.T) {
		watch := g.watch(t)
		body := "to the gateway " + uuid.NewString()[:8]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := ep.Send(ctx, qwencli.SendOptions{To: "gateway-it", Content: body, FromMode: "prompting"})
		if err != nil || res.Kind != "sent" {
			t.Fatalf("send: %+v %v", res, err)
		}
		ev := watch.wait(t, 30*time.Second, func(ev message.Event) bool {
			return ev.Type == message.EventMessage && ev.Message != nil && ev.Message.Body == body
		})
		if ev.Leg != message.ProtocolQwen || ev.Message.FromName != "sdk-peer" || ev.Message.Auth != message.AuthPeer {
			t.Fatalf("event = %+v", ev)
		}
		if _, err := ep.WaitReceipt(ctx, res.MsgID, "delivered"); err != nil {
			t.Fatalf("the SDK heard no delivered receipt: %v", err)
		}
	})
	t.Run("a bypass message from the SDK is held by the gateway and released", func(t *testing.T) {
		watch := g.watch(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := ep.Send(ctx, qwencli.SendOptions{To: "gateway-it", Content: "bypass " + uuid.NewString()[:8], FromMode: "bypass"})
		if err != nil || res.Kind != "sent" {
			t.Fatalf("send: %+v %v", res, err)
		}
		watch.wait(t, 30*time.Second, func(ev message.Event) bool { return ev.Type == message.EventHeld })
		if _, err := ep.WaitReceipt(ctx, res.MsgID, "held"); err != nil {
			t.Fatalf("no held receipt: %v", err)
		}
		if _, _, err := g.run(t, "release", res.MsgID); err != nil {
			t.Fatal(err)
		}
		if _, err := ep.WaitReceipt(ctx, res.MsgID, "delivered"); err != nil {
			t.Fatalf("no delivered receipt after release: %v", err)
		}
	})
	t.Run("a repeated body from the SDK is dropped as a duplicate", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		body := "same " + uuid.NewString()[:8]
		var last qwencli.SendResult
		for range 2 {
			res, err := ep.Send(ctx, qwencli.SendOptions{To: "gateway-it", Content: body, FromMode: "prompting"})
			if err != nil || res.Kind != "sent" {
				t.Fatalf("send: %+v %v", res, err)
			}
			last = res
		}
		r, err := ep.WaitReceipt(ctx, last.MsgID, "dropped")
		if err != nil || r.DropReason != "duplicate" {
			t.Fatalf("receipt %+v, %v; want dropped duplicate", r, err)
		}
	})
}

func TestRealQwenTUIReceiptsForGatewaySends(t *testing.T) {
	needQwen(t)
	w := newWorld(t)
	model := fakeopenai.Start(t, nil)
	s := startQwenTUI(t, w, model, qwencli.ModeDefault)
	g := startGateway(t, w, "gateway-it")
	t.Run("a prompting message is delivered into a turn", func(t *testing.T) {
		nonce := "qwen-ping-" + uuid.NewString()[:8]
		o, code := sendJSON(t, g, s.Name(), nonce, "--mode", "prompting", "--wait", "--timeout", "30s")
		if code != 0 || o.Status != message.StatusDelivered {
			t.Fatalf("exit %d, outbound %+v", code, o)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := model.WaitContains(ctx, nonce); err != nil {
			t.Fatalf("the real session never passed the message to its model: %v", err)
		}
	})
	t.Run("a bypass message is held", func(t *testing.T) {
		o, _ := sendJSON(t, g, s.Name(), "bypass "+uuid.NewString()[:8], "--mode", "bypass", "--wait", "--timeout", "5s")
		if o.Status != message.StatusHeld {
			t.Fatalf("outbound %+v, want held", o)
		}
	})
	t.Run("a repeated body is refused by the gateway's mirror, and dropped duplicate when sent anyway", func(t *testing.T) {
		body := "dup " + uuid.NewString()[:8]
		first, _ := sendJSON(t, g, s.Name(), body, "--wait", "--timeout", "20s")
		if first.Status != message.StatusDelivered {
			t.Fatalf("first send %+v", first)
		}
		// Refused before writing, in the receiver's own words: dropped,
		// duplicate, with the mirror's explanation.
		o, code := sendJSON(t, g, s.Name(), body, "--wait", "--timeout", "20s")
		if code == 0 || o.Status != message.StatusDropped || len(o.Receipts) == 0 ||
			o.Receipts[len(o.Receipts)-1].DropReason != "duplicate" || !strings.Contains(o.Receipts[len(o.Receipts)-1].Reason, "not sent") {
			t.Fatalf("a repeat inside the window was not refused by the sender: exit %d %+v", code, o)
		}
		o, _ = sendJSON(t, g, s.Name(), body, "--unpaced", "--wait", "--timeout", "20s")
		last := o.Receipts[len(o.Receipts)-1]
		if o.Status != message.StatusDropped || last.DropReason != "duplicate" {
			t.Fatalf("outbound %+v, want the real dropped duplicate receipt", o)
		}
	})
	t.Run("a stale session id is answered misaddressed", func(t *testing.T) {
		ghost := writeGhostRecord(t, w, s)
		o, _ := sendJSON(t, g, ghost, "to nobody", "--unpaced", "--wait", "--timeout", "20s")
		if o.Status != message.StatusMisaddressed {
			t.Fatalf("outbound %+v, want misaddressed", o)
		}
	})
	t.Run("a burst past the sender's bucket is dropped rate-limited", func(t *testing.T) {
		c := apiClient(g)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var ids []string
		for i := range 40 {
			o, err := c.Send(ctx, api.SendBody{To: s.Name(), Text: fmt.Sprintf("burst %d %s", i, uuid.NewString()[:8]), Unpaced: true})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, o.Message.ID)
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			for _, id := range ids {
				o := messageState(t, g, id)
				if o.Status == message.StatusDropped && o.Receipts[len(o.Receipts)-1].DropReason == "rate-limited" {
					return
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatal("no message of the burst was reported dropped rate-limited")
	})
}

func TestARealQwenSessionSendsToTheGatewayByName(t *testing.T) {
	needQwen(t)
	w := newWorld(t)
	trigger := "please-message-the-gateway"
	body := "hello from qwen " + uuid.NewString()[:8]
	model := fakeopenai.Start(t, fakeopenai.CallToolOnce(trigger, fakeopenai.SendMessageCall("gateway-it", body), "sent"))
	g := startGateway(t, w, "gateway-it")
	watch := g.watch(t)
	s := startQwenTUI(t, w, model, qwencli.ModeYolo)
	if err := s.TypeTurn(trigger); err != nil {
		t.Fatal(err)
	}
	// Yolo is the bypass review class; the gateway prompts, so mode parity
	// holds the message until it is released.
	held := watch.wait(t, 120*time.Second, func(ev message.Event) bool {
		return ev.Type == message.EventHeld && ev.Held != nil && ev.Held.Message.Body == body
	})
	if _, _, err := g.run(t, "release", held.Held.Message.ID); err != nil {
		t.Fatal(err)
	}
	ev := watch.wait(t, 30*time.Second, func(ev message.Event) bool {
		return ev.Type == message.EventMessage && ev.Message != nil && ev.Message.Body == body
	})
	if ev.Leg != message.ProtocolQwen || ev.Message.FromName != s.Name() || ev.Message.Auth != message.AuthPeer {
		t.Fatalf("event = %+v", ev)
	}
}
