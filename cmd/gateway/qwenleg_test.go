package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// qwenHost stands in for one Qwen Code process hosting several sessions:
// one inbox, one record per session (<pid>-<8 hex>.json), all naming that
// inbox and told apart by toSessionId. It answers each frame with what
// answer says.
type qwenHost struct {
	path  string
	token qwen.Token
	recs  map[string]qwen.Record // by name

	mu       sync.Mutex
	answer   func(qwen.UserFrame) (qwen.Status, bool)
	frames   chan qwen.UserFrame
	receipts chan qwen.StatusFrame
}

func startQwenHost(t *testing.T, g *gatewaytest.Gateway, names ...string) *qwenHost {
	t.Helper()
	dir := testutil.ShortTempDir(t)
	h := &qwenHost{path: filepath.Join(dir, "host.sock"), token: qwen.NewIPCToken(), recs: map[string]qwen.Record{},
		frames: make(chan qwen.UserFrame, 64), receipts: make(chan qwen.StatusFrame, 64),
		answer: func(qwen.UserFrame) (qwen.Status, bool) { return qwen.StatusDelivered, true }}
	ln, err := uds.Listen(h.path, uds.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ln.Serve(ctx, h.serve) }()
	t.Cleanup(func() { cancel(); <-done })

	pid := os.Getpid()
	start, ok := qwen.ProcStartToken(pid)
	ns, err := uds.PidNamespace(pid)
	if !ok || err != nil {
		if runtime.GOOS != "linux" {
			t.Skip("no process identity off Linux")
		}
		t.Fatalf("no process identity for our pid on Linux: start %q %v, %v", start, ok, err)
	}
	sessions := qwen.SessionsDir(g.QwenHome)
	if err := safefile.EnsureDir(sessions); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		r := qwen.Record{PID: pid, ProcStart: start, PidNS: ns, SessionID: uuid.NewString(), Cwd: "/w", Name: n,
			StartedAt: time.Now().UnixMilli(), Kind: "tui", IPCPath: h.path, IPCToken: h.token}
		b, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(sessions, qwen.RecordFileName(pid, qwen.NewSuffix()))
		if err := safefile.WriteAtomic(file, b); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(file) })
		h.recs[n] = r
	}
	return h
}

func (h *qwenHost) setAnswer(f func(qwen.UserFrame) (qwen.Status, bool)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answer = f
}

func (h *qwenHost) serve(ctx context.Context, c *uds.Conn) {
	authed := false
	for {
		line, err := c.ReadLine()
		if err != nil {
			return
		}
		if qwen.IsBlank(line) {
			continue
		}
		l, err := qwen.ParseLine(line)
		if err != nil {
			continue
		}
		if !authed {
			if l.Auth == nil || !l.Auth.Token.Equal(h.token) {
				return
			}
			authed = true
			continue
		}
		if l.Status != nil {
			select {
			case h.receipts <- *l.Status:
			default:
			}
		}
		if l.User == nil {
			continue
		}
		f := *l.User
		select {
		case h.frames <- f:
		default:
		}
		h.mu.Lock()
		answer := h.answer
		h.mu.Unlock()
		if st, ok := answer(f); ok {
			rc := qwen.NewStatusFrame(st, f.MsgID, h.path)
			if st == qwen.StatusDropped {
				rc = qwen.NewDropFrame(f.MsgID, h.path, message.DropRateLimited, nil)
			}
			payload, err := qwen.Payload(f.ReplyToken, rc)
			if err == nil {
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_ = uds.DialWrite(wctx, f.From, payload)
				cancel()
			}
		}
	}
}

// send writes f from the host's inbox to the inbox at path, presenting
// token, as a Qwen session's send_message does.
func (h *qwenHost) send(t *testing.T, path string, token qwen.Token, f qwen.UserFrame) {
	t.Helper()
	f.From, f.ReplyToken = h.path, h.token
	payload, err := qwen.Payload(token, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := uds.DialWrite(ctxT(t), path, payload); err != nil {
		t.Fatal(err)
	}
}

// receipt waits for the host to hear about msgID.
func (h *qwenHost) receipt(t *testing.T, msgID string) qwen.StatusFrame {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f := <-h.receipts:
			if f.OrigMsgID == msgID || slices.Contains(f.DroppedMsgIDs, msgID) {
				return f
			}
		case <-timeout:
			t.Fatalf("no receipt for %s reached the qwen host", msgID)
		}
	}
}

func (h *qwenHost) next(t *testing.T) qwen.UserFrame {
	t.Helper()
	select {
	case f := <-h.frames:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no frame reached the qwen host")
	}
	return qwen.UserFrame{}
}

func TestSessionsSharingOneQwenInboxAreEachReachable(t *testing.T) {
	g := startBinary(t, t.TempDir(), "--bridge=false")
	h := startQwenHost(t, g, "alpha", "beta")
	for _, name := range []string{"alpha", "beta"} {
		rec := h.recs[name]
		for _, to := range []string{name, name + " [" + rec.Ref() + "]", "[" + rec.Ref() + "]", rec.Ref()} {
			t.Run("a send to "+to+" is pinned to "+name+"'s session id", func(t *testing.T) {
				// Each body differs: the same one again would be a duplicate.
				out, err := g.Send(ctxT(t), api.SendBody{To: to, Text: "for " + name + " via " + to, Wait: true, Timeout: "5s"})
				if err != nil {
					t.Fatal(err)
				}
				f := h.next(t)
				if f.ToSessionID != rec.SessionID || f.Content != "for "+name+" via "+to {
					t.Fatalf("the host got toSessionId %q (%q), want %s's %q", f.ToSessionID, f.Content, name, rec.SessionID)
				}
				if out.Status != message.StatusDelivered || out.Message.ToSessionID != rec.SessionID {
					t.Fatalf("outbound = %+v", out)
				}
			})
		}
	}
	t.Run("their shared address is ambiguous, and each candidate reaches its session", func(t *testing.T) {
		_, err := g.Send(ctxT(t), api.SendBody{To: "uds:" + h.path, Text: "which one?"})
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Body.Code != api.CodeAmbiguous || len(ae.Body.Candidates) != 2 {
			t.Fatalf("err = %v, want ambiguous with two candidates", err)
		}
		seen := map[string]bool{}
		for _, c := range ae.Body.Candidates {
			if _, err := g.Send(ctxT(t), api.SendBody{To: c, Text: "via " + c, Wait: true, Timeout: "5s"}); err != nil {
				t.Fatalf("candidate %q: %v", c, err)
			}
			seen[h.next(t).ToSessionID] = true
		}
		if !seen[h.recs["alpha"].SessionID] || !seen[h.recs["beta"].SessionID] {
			t.Fatalf("the candidates %q reached %v", ae.Body.Candidates, seen)
		}
	})
}

func TestAClaudeSessionReachesEachOfTwoQwenSessionsSharingAnInbox(t *testing.T) {
	g := startBinary(t, t.TempDir())
	h := startQwenHost(t, g, "alpha", "beta")
	fk := newFake(t, g, "work-08", message.ModePrompting)
	for _, name := range []string{"beta", "alpha"} {
		t.Run("a message to the "+name+" alias carries "+name+"'s session id", func(t *testing.T) {
			alias := claudeAlias(t, g, name)
			if _, err := fk.Send(ctxT(t), alias, "bridged to "+name, message.ModePrompting); err != nil {
				t.Fatal(err)
			}
			f := h.next(t)
			if f.ToSessionID != h.recs[name].SessionID || f.FromName != "work-08" || f.Content != "bridged to "+name {
				t.Fatalf("the host got %+v, want it pinned to %s (%s)", f, name, h.recs[name].SessionID)
			}
		})
	}
}

func TestBridgedReceiptsAreMappedAcross(t *testing.T) {
	g := startBinary(t, t.TempDir())
	h := startQwenHost(t, g, "qwen-host")
	fk := newFake(t, g, "work-08", message.ModePrompting)
	q := newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	back := qwenAlias(t, q, "work-08")

	t.Run("a Qwen sender hears refused when the Claude session refuses", func(t *testing.T) {
		id := uuid.NewString()
		if _, err := q.Send(ctxT(t), message.Message{ID: id, To: back.Address, ToSessionID: back.SessionID, Body: "refuse me", Mode: message.ModePrompting}); err != nil {
			t.Fatal(err)
		}
		r, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Content.Envelope.Body == "refuse me" })
		if err != nil {
			t.Fatal(err)
		}
		// Claude Code says refused as expired + status_detail refused.
		rc := claude.NewStatusReceipt(fk.Address(), r.Frame.MsgID, claude.WireExpired, claude.DetailRefused, "")
		if err := fk.SendFrame(ctxT(t), r.Frame.From, rc); err != nil {
			t.Fatal(err)
		}
		ev := q.wait(t, func(ev message.Event) bool {
			return ev.Type == message.EventReceipt && ev.Receipt.MsgID == id && ev.Receipt.Status != message.StatusSent
		})
		if ev.Receipt.Status != message.StatusRefused {
			t.Fatalf("the qwen sender heard %v, want refused", ev.Receipt.Status)
		}
	})
	t.Run("a Qwen sender hears misaddressed when it pins a session the alias is not", func(t *testing.T) {
		// The alias's address with a session id no record there holds: the
		// sender's roster is stale.
		id := uuid.NewString()
		h.send(t, strings.TrimPrefix(back.Address, "uds:"), gatewayQwenRecord(t, g).IPCToken,
			qwen.UserFrame{MsgID: id, FromName: "qwen-host", FromMode: message.ModePrompting, ToSessionID: uuid.NewString(), Content: "pinned elsewhere"})
		if rc := h.receipt(t, id); rc.Status != qwen.StatusMisaddressed {
			t.Fatalf("the qwen sender heard %v, want misaddressed", rc.Status)
		}
	})

	alias := claudeAlias(t, g, "qwen-host")
	tests := []struct {
		name   string
		answer qwen.Status
		detail string
	}{
		{"a Claude sender hears refused (expired, detail refused) when the Qwen session refuses", qwen.StatusRefused, claude.DetailRefused},
		{"a Claude sender hears misaddressed (expired, detail misaddressed) when the Qwen session says misaddressed", qwen.StatusMisaddressed, "misaddressed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.setAnswer(func(qwen.UserFrame) (qwen.Status, bool) { return tt.answer, true })
			id, err := fk.Send(ctxT(t), alias, "to qwen: "+tt.name, message.ModePrompting)
			if err != nil {
				t.Fatal(err)
			}
			f, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == id })
			if err != nil {
				t.Fatal(err)
			}
			if f.Status != claude.WireExpired || f.StatusDetail != tt.detail {
				t.Fatalf("receipt = %s/%s, want expired/%s", f.Status, f.StatusDetail, tt.detail)
			}
		})
	}
}

// TestControllerTokensEndToEnd presents a token from `gateway controllers
// add` to the running gateway's Qwen inbox, as a program would.
func TestControllerTokensEndToEnd(t *testing.T) {
	root := t.TempDir()
	g := startBinary(t, root, "--bridge=false")
	events := collect(t, g)
	out, _, code := runCLI(t, g.StateDir, "controllers", "add", "--label", "voice front-end")
	tok := qwen.Token(strings.TrimSpace(out))
	if code != 0 {
		t.Fatalf("controllers add: exit %d", code)
	}
	gw := gatewayQwenRecord(t, g)
	send := func(t *testing.T, id string) {
		t.Helper()
		f := qwen.UserFrame{MsgID: id, FromName: "voice", Content: "from a controller", ToSessionID: gw.SessionID}
		payload, err := qwen.Payload(tok, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := uds.DialWrite(ctxT(t), gw.IPCPath, payload); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a message presenting the token is delivered, classified controller", func(t *testing.T) {
		id := uuid.NewString()
		send(t, id)
		ev := waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventMessage && ev.Message.ID == id })
		if ev.Message.Auth != message.AuthController || ev.Message.Controller != "voice front-end" || ev.Message.Body != "from a controller" {
			t.Fatalf("message = %+v, want auth controller with the grant's label", ev.Message)
		}
	})
	t.Run("once removed, the token no longer gets a message in", func(t *testing.T) {
		lst, _, _ := runCLI(t, g.StateDir, "controllers", "list")
		var id string
		for _, line := range strings.Split(lst, "\n") {
			if strings.Contains(line, "voice front-end") {
				id = strings.Fields(line)[0]
			}
		}
		if _, _, code := runCLI(t, g.StateDir, "controllers", "remove", id); code != 0 {
			t.Fatalf("remove %q: exit %d", id, code)
		}
		gone, ok := uuid.NewString(), uuid.NewString()
		send(t, gone)
		// A message that does arrive afterwards proves the first was read
		// (and silently dropped) rather than still in flight.
		q := newQwenPeer(t, g, "probe", message.ModePrompting)
		if _, err := q.Send(ctxT(t), message.Message{ID: ok, To: "uds:" + gw.IPCPath, ToSessionID: gw.SessionID, Body: "after", Mode: message.ModePrompting}); err != nil {
			t.Fatal(err)
		}
		ev := waitEvent(t, events, func(ev message.Event) bool {
			return ev.Type == message.EventMessage && (ev.Message.ID == ok || ev.Message.ID == gone)
		})
		if ev.Message.ID == gone {
			t.Fatalf("a removed controller token still delivered %+v", ev.Message)
		}
	})
}

// gatewayQwenRecord reads the gateway's own Qwen record (its <pid>.json).
func gatewayQwenRecord(t *testing.T, g *gatewaytest.Gateway) qwen.Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(qwen.SessionsDir(g.QwenHome), qwen.RecordFileName(g.PID, "")))
	if err != nil {
		t.Fatal(err)
	}
	r, err := qwen.ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAClaudeAndAQwenSessionSharingANameAreToldApart(t *testing.T) {
	g := startBinary(t, t.TempDir(), "--bridge=false")
	fk := newFake(t, g, "work", message.ModePrompting)
	q := newQwenPeer(t, g, "work", message.ModePrompting)
	_, err := g.Send(ctxT(t), api.SendBody{To: "work", Text: "which work?"})
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Body.Code != api.CodeAmbiguous || len(ae.Body.Candidates) != 2 {
		t.Fatalf("err = %v, want ambiguous with two candidates", err)
	}
	t.Run("each candidate reaches its own session", func(t *testing.T) {
		for _, c := range ae.Body.Candidates {
			out, err := g.Send(ctxT(t), api.SendBody{To: c, Text: "to " + c})
			if err != nil {
				t.Fatalf("candidate %q: %v", c, err)
			}
			switch out.Message.ToSessionID {
			case fk.SessionID():
				if _, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Content.Envelope.Body == "to "+c }); err != nil {
					t.Fatal(err)
				}
			case q.SessionID():
				q.wait(t, func(ev message.Event) bool { return ev.Type == message.EventMessage && ev.Message.Body == "to "+c })
			default:
				t.Fatalf("candidate %q went to %q", c, out.Message.ToSessionID)
			}
		}
	})
	ref := qwen.Ref(q.SessionID())
	for _, to := range []string{"[" + ref + "]", ref} {
		t.Run("the Qwen session is reached by "+to, func(t *testing.T) {
			out, err := g.Send(ctxT(t), api.SendBody{To: to, Text: "by ref " + to})
			if err != nil {
				t.Fatal(err)
			}
			if out.Message.ToSessionID != q.SessionID() || out.Message.Protocol != message.ProtocolQwen {
				t.Fatalf("sent to %+v", out.Message)
			}
			q.wait(t, func(ev message.Event) bool { return ev.Type == message.EventMessage && ev.Message.Body == "by ref "+to })
		})
	}
}

func TestProcessesTheGatewayStartsCarryTheQwenChildToken(t *testing.T) {
	g := startBinary(t, t.TempDir())
	events := collect(t, g)
	newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	claudeAlias(t, g, "qwen-work") // an alias worker, started by the gateway
	var env map[string]string
	files, _ := filepath.Glob(filepath.Join(g.ConfigDir, "sessions", "*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if e, err := claude.ParseEntry(b); err == nil && e.Kind == claude.KindAlias && e.Name == "qwen-work" {
			raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(e.PID), "environ"))
			if err != nil {
				t.Fatal(err)
			}
			env = map[string]string{}
			for _, kv := range strings.Split(string(raw), "\x00") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					env[k] = v
				}
			}
		}
	}
	gw := gatewayQwenRecord(t, g)
	if env == nil || env[qwen.EnvMessagingSocket] != gw.IPCPath || env[qwen.EnvMessagingToken] == "" {
		t.Fatalf("the alias worker's Qwen env = %q, %q; want the gateway's inbox %s and a token",
			env[qwen.EnvMessagingSocket], env[qwen.EnvMessagingToken], gw.IPCPath)
	}
	// The token is the child token: a frame presenting it is the gateway's own.
	id := uuid.NewString()
	payload, err := qwen.Payload(qwen.Token(env[qwen.EnvMessagingToken]),
		qwen.UserFrame{MsgID: id, FromName: "child", Content: "from a child", ToSessionID: gw.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	if err := uds.DialWrite(ctxT(t), gw.IPCPath, payload); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventMessage && ev.Message.ID == id })
	if ev.Message.Auth != message.AuthChild {
		t.Fatalf("auth = %q, want child", ev.Message.Auth)
	}
}
