package main

import (
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

func TestRequireAuthStillHearsReceiptsAndIdleNotices(t *testing.T) {
	g := startBinary(t, t.TempDir(), "--require-auth")
	// NoKey: like a real session registered elsewhere, the fake neither
	// has a key file nor sends an auth line with its receipts.
	fk := fakeclaude.Start(t, fakeclaude.Config{Name: "elsewhere", ConfigDir: g.ConfigDir, RuntimeDir: g.Runtime, Mode: message.ModePrompting, NoKey: true})
	// Idle first: a hold pending at the peer defers its idle notices.
	t.Run("an idle subscription gets its notice", func(t *testing.T) {
		res, err := g.NotifyWhenIdle(ctxT(t), api.IdleBody{To: "elsewhere", Wait: true, Timeout: "5s"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Notice == nil || res.Notice.State != "idle" || res.Notice.Peer != fk.Address() {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("a bypass send the peer holds is reported held", func(t *testing.T) {
		out, err := g.Send(ctxT(t), api.SendBody{To: "elsewhere", Text: "held please", Mode: "bypass", Wait: true, Timeout: "1s"})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != message.StatusHeld {
			t.Fatalf("status = %v, want held", out.Status)
		}
	})
}

func TestARuntimeDirWithASpaceWorks(t *testing.T) {
	g := startBinary(t, testutil.ShortTempDir(t, "my dir"))
	fk := newFake(t, g, "spaced", message.ModePrompting)
	if !strings.Contains(fk.Address(), "%20") {
		t.Fatalf("the fake's address %q is not percent-encoded", fk.Address())
	}
	t.Run("sessions lists the peer at its encoded address", func(t *testing.T) {
		ss, err := g.Sessions(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, s := range ss {
			found = found || s.Address == fk.Address()
		}
		if !found {
			t.Fatalf("sessions = %+v, want %s", ss, fk.Address())
		}
	})
	t.Run("a send goes out from the encoded address and its hold is reported", func(t *testing.T) {
		out, err := g.Send(ctxT(t), api.SendBody{To: "spaced", Text: "across a space", Mode: "bypass", Wait: true, Timeout: "1s"})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != message.StatusHeld {
			t.Fatalf("status = %v, want held", out.Status)
		}
		r, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Frame.MsgID == out.Message.ID })
		if err != nil {
			t.Fatal(err)
		}
		path, ok := addressing.SocketOf(r.Frame.From)
		if !ok || !strings.Contains(r.Frame.From, "%20") || !strings.Contains(path, "my dir") || !r.Content.Attested {
			t.Fatalf("frame from %q (path %q), attested %v", r.Frame.From, path, r.Content.Attested)
		}
	})
	t.Run("a message from the peer reaches watch", func(t *testing.T) {
		events := collect(t, g)
		if _, err := fk.Send(ctxT(t), gatewayAddress(t, g), "hello from a spaced dir", message.ModePrompting); err != nil {
			t.Fatal(err)
		}
		ev := waitEvent(t, events, func(ev message.Event) bool { return ev.Type == message.EventMessage })
		if ev.Message.From != fk.Address() || ev.Message.FromName != "spaced" {
			t.Fatalf("message = %+v", ev.Message)
		}
	})
}

// Like the real CLI (FINDINGS.md §4): one notice per subscription; a
// pending hold defers "idle", and at shutdown only the subscriptions not yet
// answered hear "exited".
func TestIdleSubscribersHearOneNoticeEach(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-08", message.ModePrompting)
	gw := gatewayAddress(t, g)
	subscribe := func(t *testing.T, id string) {
		t.Helper()
		if err := fk.SendFrame(ctxT(t), gw, claude.NewNotifyWhenIdle(fk.Address(), id, "prompting")); err != nil {
			t.Fatal(err)
		}
	}
	isNotice := func(id, state string) func(claude.Frame) bool {
		return func(f claude.Frame) bool {
			return f.Action == claude.ActionPeerIdleNotice && f.OrigMsgID == id && f.State == state
		}
	}
	subscribe(t, "sub-idle")
	if _, err := fk.WaitControl(ctxT(t), isNotice("sub-idle", claude.IdleStateIdle)); err != nil {
		t.Fatal(err)
	}
	// A bypass message to the prompting gateway is held; a subscription
	// made now is not answered while it waits.
	if _, err := fk.Send(ctxT(t), gw, "hold me", message.ModeBypass); err != nil {
		t.Fatal(err)
	}
	if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.Status == claude.WireHeld }); err != nil {
		t.Fatal(err)
	}
	subscribe(t, "sub-held")
	g.Stop(t)
	if _, err := fk.WaitControl(ctxT(t), isNotice("sub-held", claude.IdleStateExited)); err != nil {
		t.Fatal(err)
	}
	// A frame of our own, sent after shutdown, arrives after everything
	// the gateway sent on its way out.
	if err := fk.SendFrame(ctxT(t), fk.Address(), claude.NewNotifyWhenIdle(gw, "sentinel", "prompting")); err != nil {
		t.Fatal(err)
	}
	if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.MsgID == "sentinel" }); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, f := range fk.Control() {
		if f.Action == claude.ActionPeerIdleNotice {
			got[f.OrigMsgID] = append(got[f.OrigMsgID], f.State)
		}
	}
	if s := got["sub-idle"]; len(s) != 1 || s[0] != claude.IdleStateIdle {
		t.Errorf("sub-idle notices = %v, want [idle]", s)
	}
	if s := got["sub-held"]; len(s) != 1 || s[0] != claude.IdleStateExited {
		t.Errorf("sub-held notices = %v, want [exited]", s)
	}
}
