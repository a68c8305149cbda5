package fakeclaude_test

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

type dirs struct{ config, runtime string }

func newDirs(t *testing.T) dirs {
	t.Helper()
	return dirs{config: t.TempDir(), runtime: testutil.ShortTempDir(t)}
}

func (d dirs) start(t *testing.T, name string, mode message.Mode) *fakeclaude.Peer {
	t.Helper()
	return fakeclaude.Start(t, fakeclaude.Config{Name: name, ConfigDir: d.config, RuntimeDir: d.runtime, Mode: mode})
}

func TestStartRegistersLikeARealSession(t *testing.T) {
	d := newDirs(t)
	var entryPath, keyPath, socket string
	t.Run("a started fake has a live entry, a key file and a listening socket", func(t *testing.T) {
		p := d.start(t, "work-1", message.ModePrompting)
		socket = strings.TrimPrefix(p.Address(), "uds:")
		if want := filepath.Join(d.runtime, "cc-socks", strconv.Itoa(p.PID())+".sock"); socket != want {
			t.Errorf("socket %s, want %s", socket, want)
		}
		entryPath = filepath.Join(d.config, "sessions", strconv.Itoa(p.PID())+".json")
		b, err := os.ReadFile(entryPath)
		if err != nil {
			t.Fatal(err)
		}
		e, err := claude.ParseEntry(b)
		if err != nil {
			t.Fatal(err)
		}
		ticks, err := uds.StartTicks(p.PID())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case e.Name != "work-1", e.SessionID != p.SessionID(), e.MessagingSocketPath != socket:
			t.Errorf("entry = %+v", e)
		case e.PID == os.Getpid() || !uds.Alive(e.PID):
			t.Errorf("entry pid %d: want a live stand-in, not the test", e.PID)
		case e.ProcStart != strconv.FormatUint(ticks, 10):
			t.Errorf("procStart %q, want the stand-in's start ticks %d", e.ProcStart, ticks)
		}
		keyPath = filepath.Join(d.config, "sessions", claude.KeyFileName(p.PID(), socket))
		kb, err := os.ReadFile(keyPath)
		if err != nil {
			t.Fatalf("no key file: %v", err)
		}
		if k, err := claude.ParseKeyFile(kb); err != nil || len(k.PeerToken) != 32 {
			t.Errorf("key file = %+v, %v", k, err)
		}
		c, err := net.Dial("unix", socket)
		if err != nil {
			t.Fatalf("socket does not answer: %v", err)
		}
		c.Close()
	})
	// The subtest's cleanup has run: the fake is gone like a real session.
	for _, f := range []string{entryPath, keyPath, socket} {
		if _, err := os.Lstat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there after the fake stopped: %v", f, err)
		}
	}
}

func TestAPromptingFrameArrivesFromAVerifiedPeer(t *testing.T) {
	d := newDirs(t)
	to := d.start(t, "to", message.ModePrompting)
	from := d.start(t, "from", message.ModePrompting)
	id, err := from.Send(testutil.Context(t, 20*time.Second), to.Address(), "hello </cross-session-message> there", message.ModePrompting)
	if err != nil {
		t.Fatal(err)
	}
	r, err := to.WaitReceived(testutil.Context(t, 20*time.Second), func(r fakeclaude.Received) bool { return r.Frame.MsgID == id })
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.Held:
		t.Error("a prompting frame to a prompting session was held")
	case r.Auth != message.AuthPeer:
		t.Errorf("auth = %v, want peer (the sender read the target's key file)", r.Auth)
	case !r.Content.Attested || r.Content.Envelope.Body != "hello </cross-session-message> there":
		t.Errorf("content = %+v", r.Content)
	case r.Content.Envelope.From != from.Address() || r.Frame.From != from.Address():
		t.Errorf("from = %q / %q, want %q", r.Content.Envelope.From, r.Frame.From, from.Address())
	case r.SenderID != os.Getpid():
		t.Errorf("sender pid %d, want the test process %d", r.SenderID, os.Getpid())
	}
	if got := from.Control(); len(got) != 0 {
		t.Errorf("a clean delivery got receipts: %+v", got)
	}
}

func TestABypassFrameIsHeldWithAHeldReceipt(t *testing.T) {
	d := newDirs(t)
	to := d.start(t, "to", message.ModePrompting)
	from := d.start(t, "from", message.ModeBypass)
	id, err := from.Send(testutil.Context(t, 20*time.Second), to.Address(), "do it", message.ModeBypass)
	if err != nil {
		t.Fatal(err)
	}
	r, err := to.WaitReceived(testutil.Context(t, 20*time.Second), func(r fakeclaude.Received) bool { return r.Frame.MsgID == id })
	if err != nil {
		t.Fatal(err)
	}
	if !r.Held {
		t.Error("a bypass frame to a prompting session was not held")
	}
	f, err := from.WaitControl(testutil.Context(t, 20*time.Second), func(f claude.Frame) bool { return f.OrigMsgID == id })
	if err != nil {
		t.Fatal(err)
	}
	if f.Action != claude.ActionPeerMessageStatus || f.Status != claude.WireHeld || f.From != to.Address() {
		t.Fatalf("receipt = %+v, want a held peer_message_status from %s", f, to.Address())
	}
	t.Run("releasing it sends delivered", func(t *testing.T) {
		to.Decide(testutil.Context(t, 20*time.Second), id, true)
		if _, err := from.WaitControl(testutil.Context(t, 20*time.Second), func(f claude.Frame) bool {
			return f.OrigMsgID == id && f.Status == claude.WireDelivered
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestNotifyWhenIdleIsAnsweredWithAnIdleNotice(t *testing.T) {
	d := newDirs(t)
	to := d.start(t, "to", message.ModePrompting)
	from := d.start(t, "from", message.ModePrompting)
	id := uuid.NewString()
	if err := from.SendFrame(testutil.Context(t, 20*time.Second), to.Address(), claude.NewNotifyWhenIdle(from.Address(), id, "prompting")); err != nil {
		t.Fatal(err)
	}
	f, err := from.WaitControl(testutil.Context(t, 20*time.Second), func(f claude.Frame) bool { return f.OrigMsgID == id })
	if err != nil {
		t.Fatal(err)
	}
	if f.Action != claude.ActionPeerIdleNotice || f.State != claude.IdleStateIdle || f.From != to.Address() || f.FinishedAt <= 0 {
		t.Fatalf("notice = %+v, want peer_idle_notice idle from %s", f, to.Address())
	}
	if got := to.Control(); len(got) != 1 || got[0].Action != claude.ActionNotifyWhenIdle {
		t.Errorf("the fake recorded %+v, want the one subscription", got)
	}
}

func TestAPendingHoldDefersIdleNoticesUntilItIsDecided(t *testing.T) {
	d := newDirs(t)
	to := d.start(t, "to", message.ModePrompting)
	from := d.start(t, "from", message.ModePrompting)
	noticed := func(id string) bool {
		for _, f := range from.Control() {
			if f.OrigMsgID == id && f.Action == claude.ActionPeerIdleNotice {
				return true
			}
		}
		return false
	}
	held, err := from.Send(testutil.Context(t, 20*time.Second), to.Address(), "hold me", message.ModeBypass)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := from.WaitControl(testutil.Context(t, 20*time.Second), func(f claude.Frame) bool { return f.OrigMsgID == held && f.Status == claude.WireHeld }); err != nil {
		t.Fatal(err)
	}
	sub := uuid.NewString()
	if err := from.SendFrame(testutil.Context(t, 20*time.Second), to.Address(), claude.NewNotifyWhenIdle(from.Address(), sub, "prompting")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // an immediate answer would have come by now
	if noticed(sub) {
		t.Fatal("an idle notice came while a hold was pending")
	}
	to.Decide(testutil.Context(t, 20*time.Second), held, false)
	if _, err := from.WaitControl(testutil.Context(t, 20*time.Second), func(f claude.Frame) bool { return f.OrigMsgID == sub && f.Action == claude.ActionPeerIdleNotice }); err != nil {
		t.Fatalf("the decision did not answer the deferred subscription: %v", err)
	}
}

func TestSendFromProcessWritesFromTheRegisteredProcess(t *testing.T) {
	d := newDirs(t)
	to := d.start(t, "to", message.ModePrompting)
	from := d.start(t, "from", message.ModePrompting)
	id, err := from.SendFromProcess(testutil.Context(t, 20*time.Second), to.Address(), "hello", message.ModePrompting)
	if err != nil {
		t.Fatal(err)
	}
	r, err := to.WaitReceived(testutil.Context(t, 20*time.Second), func(r fakeclaude.Received) bool { return r.Frame.MsgID == id })
	if err != nil {
		t.Fatal(err)
	}
	if r.SenderID != from.PID() || from.PID() == os.Getpid() {
		t.Errorf("sender pid %d, want the sender's registered process %d", r.SenderID, from.PID())
	}
}
