package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// A real Claude Code session and a real Qwen Code session exchange a
// message and its answer through the gateway, each by the other's name.
// Both run in the bypass review class (Claude: bypassPermissions as root
// needs IS_SANDBOX=1; Qwen: yolo, which scripted tool calls need anyway),
// so mode parity delivers both ways without a person.
func TestClaudeAndQwenExchangeAMessageAndItsAnswer(t *testing.T) {
	needInterop(t)
	needQwen(t)
	w := gatewaytest.NewWorld(t)
	ping := "ping-" + uuid.NewString()[:8]
	pong := "pong-" + uuid.NewString()[:8]

	qmodel := fakeopenai.Start(t, fakeopenai.CallToolOnce(ping, fakeopenai.SendMessageCall("work-it", pong), "answered"))
	qs := startQwenTUI(t, w, qmodel, qwencli.ModeYolo)
	trigger := "please-ping-qwen"
	cmodel := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(trigger, []fakeanthropic.Call{{Tool: "SendMessage", Input: fmt.Sprintf(`{"to":%q,"message":%q}`, qs.Name(), ping)}}, "sent")))
	g := gatewaytest.Start(t, w, "gateway-it")
	cs := claudecli.Start(t, claudecli.Options{
		APIURL: cmodel.URL(), Name: "work-it", ConfigDir: w.ConfigDir, XDGRuntimeDir: w.Runtime,
		Args: []string{"--permission-mode", "bypassPermissions"}, Env: []string{"IS_SANDBOX=1"},
	})
	waitAlias(t, g, qs.Name())
	waitQwenAlias(t, w, "work-it")
	// One roster, both protocols, each with its ref; neither alias shows.
	ss := g.Listed(t)
	byName := map[string]message.Session{}
	for _, s := range ss {
		byName[s.Name] = s
	}
	if c, q := byName["work-it"], byName[qs.Name()]; c.Protocol != message.ProtocolClaude || q.Protocol != message.ProtocolQwen ||
		q.Ref != qwencli.Ref(qs.SessionID()) || c.SessionID != cs.SessionID() || len(ss) != 2 {
		t.Fatalf("sessions = %+v", ss)
	}
	if err := cs.SendUserTurn(trigger); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	qreq, err := qmodel.WaitContains(ctx, ping)
	if err != nil {
		t.Fatalf("the Qwen session never got the Claude session's message: %v", err)
	}
	req, err := cmodel.WaitContains(ctx, pong)
	if err != nil {
		t.Fatalf("the Claude session never got the Qwen session's answer: %v", err)
	}
	if !strings.Contains(req.Text(), `from-name="`+qs.Name()+`"`) {
		t.Errorf("the answer does not come from the Qwen session's name: %s", req.Text())
	}
	// The Qwen session sees the Claude sender's name.
	if !strings.Contains(qreq.Text(), `name="work-it">`+"\n"+ping) {
		t.Errorf("the Qwen session does not see the message as from work-it: %s", qreq.Text())
	}
	// The receipts each sender gets. The real Qwen TUI answered the
	// forwarded ping with its own delivered receipt; the real Claude session
	// sends none for a clean delivery, so the forwarded pong is delivered by
	// inference after the settle window.
	toQwen, toClaude := bridgedID(t, g, "work-it"), bridgedID(t, g, qs.Name())
	g.WaitStatus(t, toQwen, func(o router.Outbound) bool {
		last := o.Receipts[len(o.Receipts)-1]
		return o.Status == message.StatusDelivered && last.From == "uds:"+qs.IPCPath() && last.Detail == ""
	})
	g.WaitStatus(t, toClaude, func(o router.Outbound) bool {
		return o.Status == message.StatusDelivered && o.Receipts[len(o.Receipts)-1].Detail == "inferred"
	})
	// Both relays are a clean delivery, which neither real sender shows:
	// Claude's CLI gives its model a notice only for held, denied, expired,
	// refused, dropped and released-after-hold, and Qwen's TUI prints a
	// delivered receipt only after a hold. So the Claude model must have
	// seen no delivery notice at all.
	for _, r := range cmodel.Requests() {
		if txt := r.LastUser().Text(); strings.Contains(txt, "[Cross-session delivery notice]") && !strings.Contains(txt, `"success":true`) {
			t.Errorf("the Claude sender got a delivery notice for a clean delivery: %s", txt)
		}
	}
}

// bridgedID is the id of the message the gateway forwarded for the sender
// named from, read from its log (the control API lists no forwards).
func bridgedID(t *testing.T, g *gatewaytest.Gateway, from string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for line := range strings.Lines(g.Logs()) {
			var rec struct {
				Msg   string `json:"msg"`
				From  string `json:"from"`
				MsgID string `json:"msg_id"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "bridged message" && rec.From == from {
				return rec.MsgID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway never logged a message bridged from %s", from)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Receipts cross the bridge both ways, as each real CLI's own: a prompting
// Claude session's message is held by a yolo Qwen session and the Claude
// model gets the held notice; the Qwen session's answer is held by the
// Claude session, whose person then denies it, and the Qwen TUI prints the
// held and the declined receipt.
func TestHeldAndDeniedReceiptsCrossTheBridge(t *testing.T) {
	needInterop(t)
	needQwen(t)
	w := gatewaytest.NewWorld(t)
	ping := "ping-" + uuid.NewString()[:8]
	pong := "pong-" + uuid.NewString()[:8]
	qtrigger, ctrigger := "please-message-claude", "please-ping-qwen"

	qmodel := fakeopenai.Start(t, fakeopenai.CallToolOnce(qtrigger, fakeopenai.SendMessageCall("work-it", pong), "sent"))
	qs := startQwenTUI(t, w, qmodel, qwencli.ModeYolo)
	cmodel := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(ctrigger, []fakeanthropic.Call{{Tool: "SendMessage", Input: fmt.Sprintf(`{"to":%q,"message":%q}`, qs.Name(), ping)}}, "sent")))
	g := gatewaytest.Start(t, w, "gateway-it")
	cs := startClaude(t, w, cmodel, "work-it")
	waitAlias(t, g, qs.Name())
	waitQwenAlias(t, w, "work-it")

	t.Run("Qwen's held reaches the Claude sender as its held notice", func(t *testing.T) {
		if err := cs.SendUserTurn(ctrigger); err != nil {
			t.Fatal(err)
		}
		waitNotice(t, cmodel, "was held by that session")
		if qmodel.Contains(ping) {
			t.Fatal("the held message reached the Qwen model")
		}
	})
	t.Run("Claude's held and denied reach the Qwen sender as its receipts", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var hold claudecli.Hold
		triggerQwenSend(t, qs, qmodel, qtrigger, func() bool {
			c, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
			h, err := cs.WaitHold(c, func(h claudecli.Hold) bool { return h.State == "held" })
			hold = h
			return err == nil
		})
		if hold.FromName != qs.Name() {
			t.Errorf("the Claude session shows the hold from %q, want %q", hold.FromName, qs.Name())
		}
		waitScreen(t, qs, "Message to work-it: Your message is held for the recipient user to review")
		if _, err := cs.DecideHold(ctx, hold.HoldID, false); err != nil {
			t.Fatal(err)
		}
		waitScreen(t, qs, "Message to work-it: The recipient declined your message")
	})
}

// waitScreen waits until the TUI's screen shows want, however the terminal
// wrapped it.
func waitScreen(t *testing.T, s *qwencli.Session, want string) {
	t.Helper()
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	deadline := time.Now().Add(30 * time.Second)
	for {
		screen, err := s.Screen()
		if err == nil && strings.Contains(squash(screen), squash(want)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the TUI never showed %q:\n%s", want, screen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitAlias waits until the gateway lists a session named name and its
// Claude-side alias worker is registered.
func waitAlias(t *testing.T, g *gatewaytest.Gateway, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(g.ConfigDir, "sessions", "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if e, err := claude.ParseEntry(b); err == nil && e.Name == name && e.Kind == claude.KindAlias {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no alias of %q appeared", name)
}

// waitQwenAlias waits until the gateway's Qwen-side alias record named name
// is published.
func waitQwenAlias(t *testing.T, w *gatewaytest.World, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(qwen.SessionsDir(w.QwenHome), "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if r, err := qwen.ParseRecord(b); err == nil && r.Name == name && r.Kind == qwen.KindAlias {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no qwen alias of %q appeared", name)
}

// An alias worker never outlives the gateway: killed without a chance to
// clean up, the gateway still takes its workers down, and each worker
// deregisters on the way out.
func TestAliasWorkersDieWithTheGateway(t *testing.T) {
	needQwen(t)
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gateway-it")
	startEndpoint(t, w, "sdk-peer")
	waitAlias(t, g, "sdk-peer")
	var pid int
	files, _ := filepath.Glob(filepath.Join(w.ConfigDir, "sessions", "*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if e, err := claude.ParseEntry(b); err == nil && e.Kind == claude.KindAlias && e.Name == "sdk-peer" {
			pid = e.PID
		}
	}
	if pid == 0 {
		t.Fatal("no alias worker entry")
	}
	// Its own process group: the terminal's Ctrl-C or hang-up reaches the
	// gateway, which stops its workers in order, not each worker at once.
	wg, err := syscall.Getpgid(pid)
	gg, gerr := syscall.Getpgid(g.PID)
	if err != nil || gerr != nil || wg == gg {
		t.Fatalf("worker %d in process group %d (%v), the gateway's is %d (%v): want its own", pid, wg, err, gg, gerr)
	}
	g.Kill(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := os.Stat(filepath.Join(w.ConfigDir, "sessions", strconv.Itoa(pid)+".json"))
		gone := syscall.Kill(pid, 0) != nil
		if gone && os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %d alive=%v, entry err=%v, after the gateway was killed", pid, !gone, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
