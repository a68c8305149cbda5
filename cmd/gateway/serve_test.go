package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

func ctxT(t *testing.T) context.Context { return testutil.Context(t, 15*time.Second) }

func newFake(t *testing.T, g *gatewaytest.Gateway, name string, mode message.Mode) *fakeclaude.Peer {
	return fakeclaude.Start(t, fakeclaude.Config{Name: name, ConfigDir: g.ConfigDir, RuntimeDir: g.Runtime, Mode: mode})
}

// collect streams events into a channel for the test's life.
func collect(t *testing.T, g *gatewaytest.Gateway) <-chan message.Event {
	ch := make(chan message.Event, 256)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Watch(ctx, 0, func(ev message.Event) error {
			select {
			case ch <- ev:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch
}

func waitEvent(t *testing.T, ch <-chan message.Event, pred func(message.Event) bool) message.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-ch:
			if pred(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("timed out waiting for an event")
		}
	}
}

func TestSessionsListsLivePeersOnly(t *testing.T) {
	g := startBinary(t, t.TempDir())
	a := newFake(t, g, "work-08", message.ModePrompting)
	b := newFake(t, g, "review", message.ModePrompting)
	b.Deregister()
	ss, err := g.Sessions(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("sessions = %+v, want only work-08 (review deregistered, gateway itself left out)", ss)
	}
	s := ss[0]
	if s.Name != "work-08" || s.PID != a.PID() || s.Address != a.Address() || s.Ref != addressing.Ref(a.SessionID()) ||
		s.Protocol != message.ProtocolClaude || !s.Reachable {
		t.Fatalf("session = %+v", s)
	}
}

func TestADeadEntryIsSweptAndARecycledOneKept(t *testing.T) {
	g := startBinary(t, t.TempDir())
	sessions := filepath.Join(g.ConfigDir, "sessions")
	dead := claude.Entry{PID: 999999, SessionID: "dead", ProcStart: "1", MessagingSocketPath: "/nonexistent/999999.sock"}
	recycled := claude.Entry{PID: os.Getppid(), SessionID: "recycled", ProcStart: "1", MessagingSocketPath: "/nonexistent/1.sock"}
	for _, e := range []claude.Entry{dead, recycled} {
		b, _ := json.Marshal(e)
		if err := os.WriteFile(filepath.Join(sessions, strconv.Itoa(e.PID)+".json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.Sessions(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sessions, "999999.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead entry was not swept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sessions, strconv.Itoa(os.Getppid())+".json")); err != nil {
		t.Errorf("the recycled-pid entry was removed: %v", err)
	}
}

func TestSendByNameDeliversTheEnvelopeWithAuth(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	out, err := g.Send(ctxT(t), api.SendBody{To: "work-08", Text: "hello </cross-session-message> there", Wait: true, Timeout: "5s"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != message.StatusDelivered {
		t.Fatalf("status = %v, want delivered (inferred)", out.Status)
	}
	r, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Frame.MsgID == out.Message.ID })
	if err != nil {
		t.Fatal(err)
	}
	env := r.Content.Envelope
	switch {
	case r.Auth != message.AuthPeer:
		t.Errorf("auth = %v, want peer (the key file's token)", r.Auth)
	case !r.Content.Attested:
		t.Errorf("envelope not attested: %q", r.Content.Raw)
	case env.FromName != "gateway" || env.FromMode != "prompting" || env.Body != "hello </cross-session-message> there":
		t.Errorf("envelope = %+v", env)
	case !strings.HasPrefix(env.From, "uds:") || env.FromSession == "":
		t.Errorf("from = %q, from-session = %q", env.From, env.FromSession)
	case r.Frame.Priority != "next" || r.Frame.MsgV != 1:
		t.Errorf("frame = %+v", r.Frame)
	}
}

func TestABypassSendIsHeldThenReleased(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	out, err := g.Send(ctxT(t), api.SendBody{To: "work-08", Text: "hi", Mode: "bypass", Wait: true, Timeout: "1s"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != message.StatusHeld {
		t.Fatalf("status = %v, want held", out.Status)
	}
	fk.Decide(ctxT(t), out.Message.ID, true)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		got, err := g.Message(ctxT(t), out.Message.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == message.StatusDelivered {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("released message never became delivered")
}

func TestAMessageToTheGatewayShowsInWatchWithTheSendersName(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	events := collect(t, g)
	gw := gatewayAddress(t, g)
	if _, err := fk.Send(ctxT(t), gw, "ping from work", message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventMessage })
	m := ev.Message
	if m.FromName != "work-08" || m.Body != "ping from work" || !m.Attested || m.Auth != message.AuthPeer || m.From != fk.Address() {
		t.Fatalf("message = %+v", m)
	}
}

func gatewayAddress(t *testing.T, g *gatewaytest.Gateway) string {
	t.Helper()
	ents, _ := filepath.Glob(filepath.Join(g.ConfigDir, "sessions", "*.json"))
	for _, f := range ents {
		b, _ := os.ReadFile(f)
		e, err := claude.ParseEntry(b)
		if err == nil && e.Name == "gateway" && e.PID == g.PID {
			return addressing.UDS(e.MessagingSocketPath)
		}
	}
	t.Fatal("the gateway's registry entry is missing")
	return ""
}

func TestInboundPolicies(t *testing.T) {
	tests := []struct {
		name       string
		inbound    string // --inbound
		mode       message.Mode
		wantEvent  message.EventType
		wantStatus claude.WireStatus
		wantDetail string
	}{
		{"mode parity delivers a prompting sender", "parity", message.ModePrompting, message.EventMessage, "", ""},
		{"mode parity holds a bypass sender and says held", "parity", message.ModeBypass, message.EventHeld, claude.WireHeld, ""},
		{"accept delivers a bypass sender", "accept", message.ModeBypass, message.EventMessage, "", ""},
		{"refuse answers expired with detail refused", "refuse", message.ModePrompting, message.EventDrop, claude.WireExpired, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startBinary(t, t.TempDir(), "--inbound", tt.inbound)
			fk := newFake(t, g, "work-08", message.ModePrompting)
			events := collect(t, g)
			id, err := fk.Send(ctxT(t), gatewayAddress(t, g), "hello", tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			waitEvent(t, events, func(ev message.Event) bool { return ev.Type == tt.wantEvent })
			if tt.wantStatus == "" {
				return
			}
			f, auth, err := fk.WaitControlAuth(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == id })
			if err != nil {
				t.Fatal(err)
			}
			if f.Status != tt.wantStatus || f.StatusDetail != tt.wantDetail || f.Action != claude.ActionPeerMessageStatus {
				t.Fatalf("receipt = %+v", f)
			}
			if auth != message.AuthPeer {
				t.Fatalf("receipt auth = %v, want the sender's own peer token like the real CLI", auth)
			}
		})
	}
}

func TestAHeldInboundMessageCanBeReleasedOrDenied(t *testing.T) {
	for _, release := range []bool{true, false} {
		name := map[bool]string{true: "release delivers it and tells the sender delivered", false: "deny drops it and tells the sender denied"}[release]
		t.Run(name, func(t *testing.T) {
			g := startBinary(t, t.TempDir())
			fk := newFake(t, g, "work-08", message.ModePrompting)
			events := collect(t, g)
			id, err := fk.Send(ctxT(t), gatewayAddress(t, g), "hold me", message.ModeBypass)
			if err != nil {
				t.Fatal(err)
			}
			waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventHeld })
			held, err := g.Held(ctxT(t))
			if err != nil || len(held) != 1 || held[0].Message.ID != id {
				t.Fatalf("held = %+v, %v", held, err)
			}
			if err := g.Decide(ctxT(t), id, release, "no thanks"); err != nil {
				t.Fatal(err)
			}
			want := claude.WireDenied
			if release {
				want = claude.WireDelivered
				waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventMessage && ev.Message.ID == id })
			}
			if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == id && f.Status == want }); err != nil {
				t.Fatalf("no %s receipt: %v", want, err)
			}
			if err := g.Decide(ctxT(t), id, release, ""); err == nil {
				t.Fatal("deciding twice succeeded")
			}
		})
	}
}

func TestDuplicatesAreDroppedWithAReceipt(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	gw := gatewayAddress(t, g)
	if _, err := fk.Send(ctxT(t), gw, "same", message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	id2, err := fk.Send(ctxT(t), gw, "same", message.ModePrompting)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == id2 })
	if err != nil {
		t.Fatal(err)
	}
	if f.Status != claude.WireDropped || f.DropReason != "duplicate" {
		t.Fatalf("receipt = %+v, want dropped duplicate", f)
	}
}

func TestIdleNoticesBothWays(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	t.Run("the gateway asks a peer and gets its idle notice", func(t *testing.T) {
		res, err := g.NotifyWhenIdle(ctxT(t), api.IdleBody{To: "work-08", Wait: true, Timeout: "5s"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Notice == nil || res.Notice.State != "idle" || res.Notice.Peer != fk.Address() {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("a peer asks the gateway and hears idle once; one still waiting at shutdown hears exited", func(t *testing.T) {
		gw := gatewayAddress(t, g)
		if err := fk.SendFrame(ctxT(t), gw, claude.NewNotifyWhenIdle(fk.Address(), "sub-1", "prompting")); err != nil {
			t.Fatal(err)
		}
		if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool {
			return f.Action == claude.ActionPeerIdleNotice && f.OrigMsgID == "sub-1" && f.State == "idle"
		}); err != nil {
			t.Fatal(err)
		}
		// A pending hold defers the idle notice, as in Claude Code: sub-2
		// is still waiting when the gateway stops.
		held, err := fk.Send(ctxT(t), gw, "hold me", message.ModeBypass)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == held && f.Status == claude.WireHeld }); err != nil {
			t.Fatal(err)
		}
		if err := fk.SendFrame(ctxT(t), gw, claude.NewNotifyWhenIdle(fk.Address(), "sub-2", "prompting")); err != nil {
			t.Fatal(err)
		}
		g.Stop(t)
		if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool {
			return f.Action == claude.ActionPeerIdleNotice && f.OrigMsgID == "sub-2" && f.State == "exited"
		}); err != nil {
			t.Fatal(err)
		}
		for _, f := range fk.Control() {
			if f.Action == claude.ActionPeerIdleNotice && f.OrigMsgID == "sub-1" && f.State == "exited" {
				t.Fatal("sub-1 heard a second notice (exited); Claude Code sends one per subscription")
			}
			if f.Action == claude.ActionPeerIdleNotice && f.OrigMsgID == "sub-2" && f.State == "idle" {
				t.Fatal("sub-2 heard idle while a hold was pending")
			}
		}
	})
}

func TestShutdownRemovesEveryRegistrationFile(t *testing.T) {
	g := startBinary(t, t.TempDir())
	gw := strings.TrimPrefix(gatewayAddress(t, g), "uds:")
	sessions := filepath.Join(g.ConfigDir, "sessions")
	before, _ := filepath.Glob(filepath.Join(sessions, "*"))
	if len(before) != 2 {
		t.Fatalf("registration files = %v, want entry and key", before)
	}
	for _, f := range before {
		fi, _ := os.Stat(f)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	g.Stop(t)
	after, _ := filepath.Glob(filepath.Join(sessions, "*"))
	if len(after) != 0 {
		t.Fatalf("left behind: %v", after)
	}
	if _, err := os.Stat(gw); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
	if socks, _ := filepath.Glob(filepath.Join(g.Runtime, "cc-socks", "*")); len(socks) != 0 {
		t.Fatalf("sockets left behind: %v", socks)
	}
	if _, err := os.Stat(g.Socket()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("control socket left behind: %v", err)
	}
}

func TestAttachmentsAreStagedWithTheirHash(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	src := filepath.Join(g.StateDir, "files", "notes.txt") // the default files directory
	data := []byte("the attached notes\n")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := g.Send(ctxT(t), api.SendBody{To: "work-08", Text: "see file", Files: []string{src}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Frame.MsgID == out.Message.ID })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Frame.FileAttachments) != 1 {
		t.Fatalf("attachments = %+v", r.Frame.FileAttachments)
	}
	a := r.Frame.FileAttachments[0]
	sum := sha256.Sum256(data)
	staged, err := os.ReadFile(a.Path)
	if err != nil || !bytes.Equal(staged, data) || a.SHA256 != hex.EncodeToString(sum[:]) || a.FileSize != int64(len(data)) || a.FileName != "notes.txt" {
		t.Fatalf("descriptor %+v, staged %q, err %v", a, staged, err)
	}
	if filepath.Dir(a.Path) != filepath.Join(g.ConfigDir, "file-transfers") {
		t.Fatalf("staged outside the spool: %s", a.Path)
	}
}

func TestPendingHoldsExpireAtShutdown(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	events := collect(t, g)
	id, err := fk.Send(ctxT(t), gatewayAddress(t, g), "hold me", message.ModeBypass)
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventHeld })
	g.Stop(t)
	if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == id && f.Status == claude.WireExpired }); err != nil {
		t.Fatalf("no expired receipt for the pending hold: %v", err)
	}
}

func rawFrame(t *testing.T, from, body string) []byte {
	t.Helper()
	env := claude.Envelope{From: from, FromName: "raw", FromMode: "prompting", Body: body}
	b, err := claude.NewUserFrame(from, uuid.NewString(), env, nil).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestRequireAuthRefusesUnauthenticatedSenders(t *testing.T) {
	g := startBinary(t, t.TempDir(), "--require-auth")
	fk := newFake(t, g, "work-08", message.ModePrompting)
	events := collect(t, g)
	gw := strings.TrimPrefix(gatewayAddress(t, g), "uds:")
	if err := uds.DialWrite(ctxT(t), gw, rawFrame(t, fk.Address(), "no token")); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventDrop || ev.Type == message.EventMessage })
	if ev.Type != message.EventDrop || ev.Drop.Reason != message.DropUnauthenticated {
		t.Fatalf("event = %+v, want a drop for want of auth", ev)
	}
	if _, err := fk.Send(ctxT(t), gatewayAddress(t, g), "with token", message.ModePrompting); err != nil {
		t.Fatal(err)
	}
	ev = waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventMessage })
	if ev.Message.Body != "with token" || ev.Message.Auth != message.AuthPeer {
		t.Fatalf("message = %+v", ev.Message)
	}
}

func TestBadLinesAreIgnoredAndTheGatewayKeepsWorking(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	events := collect(t, g)
	gw := strings.TrimPrefix(gatewayAddress(t, g), "uds:")
	// An over-long line ends its connection; nothing else is harmed.
	big := append(bytes.Repeat([]byte("x"), 2<<20), '\n')
	_ = uds.DialWrite(ctxT(t), gw, big)
	// On one connection, lines are handled in order: when the last one
	// arrives, every bad one before it has been dealt with.
	var payload []byte
	for _, l := range []string{
		"not json", "{}", `{"type":"user"}`, `{"type":"bogus","msg_id":"x"}`, "\xff\xfe",
		`{"type":"user","msg_id":"m","session_id":"someone-else","message":{"role":"user","content":"misaddressed"}}`,
		`{"type":"control","action":"peer_message_status","status":"weird","orig_msg_id":"nope"}`,
		`[1,2,3]`, `{"type":"user","type":"user"}`,
	} {
		payload = append(payload, l+"\n"...)
	}
	payload = append(payload, rawFrame(t, fk.Address(), "still alive")...)
	if err := uds.DialWrite(ctxT(t), gw, payload); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventMessage || ev.Type == message.EventDrop })
	if ev.Type != message.EventMessage || ev.Message.Body != "still alive" {
		t.Fatalf("first event = %+v, want only the good message", ev)
	}
	if _, err := g.Sessions(ctxT(t)); err != nil {
		t.Fatalf("gateway stopped answering: %v", err)
	}
}

func TestAttachmentCapsAreEnforced(t *testing.T) {
	g := startBinary(t, t.TempDir())
	newFake(t, g, "work-08", message.ModePrompting)
	dir := filepath.Join(g.StateDir, "files", "caps")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := range 17 {
		p := filepath.Join(dir, strconv.Itoa(i)+".txt")
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		many = append(many, p)
	}
	big := filepath.Join(dir, "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(30<<20 + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tests := []struct {
		name  string
		files []string
	}{
		{"seventeen files are refused", many},
		{"a file over 30 MiB is refused", []string{big}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := g.Send(ctxT(t), api.SendBody{To: "work-08", Text: "files", Files: tt.files})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != message.StatusFailed || !strings.Contains(out.Receipts[0].Reason, "attachment") {
				t.Fatalf("outbound = %+v, want failed with an attachment reason", out)
			}
		})
	}
	t.Run("a directory is refused before any send", func(t *testing.T) {
		_, err := g.Send(ctxT(t), api.SendBody{To: "work-08", Text: "files", Files: []string{dir}})
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Body.Error, "not a regular file") {
			t.Fatalf("send = %v, want a 400 naming a non-regular file", err)
		}
	})
}

func TestMetricsMoveAsMessagesFlow(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	if _, err := g.Send(ctxT(t), api.SendBody{To: "work-08", Text: "one"}); err != nil {
		t.Fatal(err)
	}
	gw := gatewayAddress(t, g)
	events := collect(t, g)
	for range 2 {
		if _, err := fk.Send(ctxT(t), gw, "dup", message.ModePrompting); err != nil {
			t.Fatal(err)
		}
	}
	waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventDrop })
	fams := scrape(t, g)
	value := func(name string, labels map[string]string) float64 {
		for _, m := range fams[name].GetMetric() {
			ok := true
			for k, v := range labels {
				found := false
				for _, l := range m.GetLabel() {
					if l.GetName() == k && l.GetValue() == v {
						found = true
					}
				}
				ok = ok && found
			}
			if ok {
				return m.GetCounter().GetValue()
			}
		}
		return 0
	}
	if v := value("gateway_messages_total", map[string]string{"leg": "claude", "direction": "out"}); v != 1 {
		t.Errorf("messages out = %v, want 1", v)
	}
	if v := value("gateway_messages_total", map[string]string{"leg": "claude", "direction": "in"}); v != 1 {
		t.Errorf("messages in = %v, want 1", v)
	}
	if v := value("gateway_drops_total", map[string]string{"leg": "claude", "reason": "duplicate"}); v != 1 {
		t.Errorf("duplicate drops = %v, want 1", v)
	}
	// The dropped receipt goes to the sender on its own connection, after
	// the drop event: wait for the fake to have it, then for the counter.
	if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.Status == claude.WireDropped }); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"leg": "claude", "direction": "out", "status": "dropped"}
	for deadline := time.Now().Add(5 * time.Second); value("gateway_receipts_total", out) != 1; fams = scrape(t, g) {
		if time.Now().After(deadline) {
			t.Fatalf("receipts out dropped = %v, want 1", value("gateway_receipts_total", out))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func scrape(t *testing.T, g *gatewaytest.Gateway) map[string]*dto.MetricFamily {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", filepath.Join(g.StateDir, "gateway.sock"))
	}}}
	resp, err := hc.Get("http://gateway/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	return fams
}

func TestALegThatCannotRegisterIsLeftOutAndTheOthersServe(t *testing.T) {
	root := t.TempDir()
	// Qwen's home is a file: the Qwen leg cannot register there.
	if err := os.WriteFile(filepath.Join(root, "qwen"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startBinary(t, root)
	fk := newFake(t, g, "work-08", message.ModePrompting)
	out, err := g.Send(ctxT(t), api.SendBody{To: "work-08", Text: "still here", Wait: true, Timeout: "5s"})
	if err != nil || out.Status != message.StatusDelivered {
		t.Fatalf("send through the Claude leg = %+v, %v", out, err)
	}
	if _, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return true }); err != nil {
		t.Fatal(err)
	}
	ready, err := g.Ready(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ready.Legs[string(message.ProtocolQwen)]; ok || !ready.Ready {
		t.Fatalf("readiness = %+v, want ready without a Qwen leg", ready)
	}
}

func TestServeFailsWhenNoLegCanRegister(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"qwen", "claude"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("not a directory"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"CLAUDE_CONFIG_DIR": filepath.Join(root, "claude"), "QWEN_HOME": filepath.Join(root, "qwen"),
		"XDG_RUNTIME_DIR": root, "HOME": root, "TMPDIR": root}
	err := serve(ctxT(t), observability.NewLogger(io.Discard, nil), serveConfig{stateDir: filepath.Join(root, "state"), name: "gateway",
		mode: message.ModePrompting, getenv: func(k string) string { return env[k] }})
	if err == nil || !strings.Contains(err.Error(), "Claude Code") || !strings.Contains(err.Error(), "Qwen Code") {
		t.Fatalf("serve = %v, want an error naming both legs", err)
	}
}

func TestAServeThatCannotStartLeavesNoRegistration(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	root := t.TempDir()
	env := map[string]string{"CLAUDE_CONFIG_DIR": filepath.Join(root, "claude"), "QWEN_HOME": filepath.Join(root, "qwen"),
		"XDG_RUNTIME_DIR": filepath.Join(root, "run"), "HOME": root, "TMPDIR": root}
	err = serve(ctxT(t), observability.NewLogger(io.Discard, nil), serveConfig{stateDir: filepath.Join(root, "state"), name: "gateway",
		mode: message.ModePrompting, getenv: func(k string) string { return env[k] }, apiAddr: busy.Addr().String()})
	if err == nil {
		t.Fatal("serve started on an address already in use")
	}
	for _, dir := range []string{filepath.Join(root, "claude", "sessions"), filepath.Join(root, "qwen", "sessions"), filepath.Join(root, "run", "cc-socks")} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			t.Errorf("%s left behind after a failed start", filepath.Join(dir, e.Name()))
		}
	}
}
