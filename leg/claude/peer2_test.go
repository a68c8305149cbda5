package claude

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	iclock "github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

func TestAddressesWithASpaceArePercentEncoded(t *testing.T) {
	r := startRig(t, Config{Inbound: PolicyHold, RuntimeDir: testutil.ShortTempDir(t, "my dir")})
	if want := "uds:" + strings.ReplaceAll(r.p.SocketPath(), " ", "%20"); r.p.Address() != want {
		t.Fatalf("Address() = %q, want %q", r.p.Address(), want)
	}
	t.Run("a send carries the encoded from and its receipt is heard", func(t *testing.T) {
		target := listenSock(t, r.socks)
		if !strings.Contains(target.addr, "%20") {
			t.Fatalf("target address %q is not encoded", target.addr)
		}
		id := r.sendTo(t, target, message.ModeBypass, "from a spaced dir")
		f := target.waitFrame(t, func(f Frame) bool { return f.MsgID == id })
		c := ParseContent(f.Message.Content)
		if f.From != r.p.Address() || !c.Attested || c.Envelope.From != r.p.Address() {
			t.Fatalf("frame from %q, envelope %+v; want the encoded %q", f.From, c.Envelope, r.p.Address())
		}
		dial(t, r.p.SocketPath(), marshal(t, NewStatusReceipt(target.addr, id, WireHeld, "", "")))
		if ev := r.next(t, isType(message.EventReceipt)); ev.Receipt.MsgID != id {
			t.Fatalf("receipt = %+v", ev.Receipt)
		}
	})
	t.Run("an encoded reply address is verified and answered", func(t *testing.T) {
		sender := listenSock(t, r.socks)
		id, b := sender.userFrame(t, "prompting", "hold me")
		dial(t, r.p.SocketPath(), b)
		f := sender.waitFrame(t, func(f Frame) bool { return f.Action == ActionPeerMessageStatus })
		if f.OrigMsgID != id || f.Status != WireHeld {
			t.Fatalf("receipt = %+v", f)
		}
	})
	t.Run("the roster lists peers at their encoded address", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(r.p.sessionsDir, "1.json"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		s := r.rosterEntryFor(t)
		if s.Address != addressing.UDS(s.sock) || !strings.Contains(s.Address, "%20") {
			t.Fatalf("roster address %q", s.Address)
		}
	})
}

type rosterProbe struct {
	message.Session
	sock string
}

// rosterEntryFor lists a live socket registered by the process that
// listens on it.
func (r *rig) rosterEntryFor(t *testing.T) rosterProbe {
	t.Helper()
	path := filepath.Join(r.socks, strconv.FormatInt(900000+sockSeq.Add(1), 10)+".sock")
	pid, _ := listenerProcess(t, path, false)
	e := Entry{PID: pid, SessionID: uuid.NewString(), MessagingSocketPath: path, Name: "spaced", Kind: "interactive"}
	s, ok := r.p.rosterEntry(testutil.Context(t, 10*time.Second), e)
	if !ok {
		t.Fatal("the live entry was not listed")
	}
	return rosterProbe{s, path}
}

// TestHelperRebind is not a test: run as a child process, it binds the
// socket GATEWAY_TEST_REBIND names, says ready, and counts the bytes it is
// sent until its stdin closes.
func TestHelperRebind(t *testing.T) {
	path := os.Getenv("GATEWAY_TEST_REBIND")
	if path == "" {
		t.Skip("helper process only")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	got := make(chan int, 1024)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := 0
			buf := make([]byte, 4096)
			for {
				k, err := c.Read(buf)
				n += k
				if err != nil {
					break
				}
			}
			c.Close()
			got <- n
		}
	}()
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	// One last empty connection from our parent arrives after any receipt.
	total := 0
	for n := range got {
		if n == 0 {
			break
		}
		total += n
	}
	fmt.Println("bytes", total)
	os.Exit(0)
}

func TestLaterReceiptsRecheckTheReplySocketsOwner(t *testing.T) {
	r := startRig(t, Config{Inbound: PolicyHold})
	sender := listenSock(t, r.socks)
	id, b := sender.userFrame(t, "prompting", "held, then the sender goes away")
	dial(t, r.p.SocketPath(), b)
	sender.waitFrame(t, func(f Frame) bool { return f.Status == WireHeld && f.OrigMsgID == id })

	// The sender exits; another process binds the same path.
	sender.close() // closing a Go unix listener unlinks its path
	if err := os.Remove(sender.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestHelperRebind$")
	child.Env = append(os.Environ(), "GATEWAY_TEST_REBIND="+sender.path)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("helper said %q", lines.Text())
	}

	if err := r.p.Decide(testutil.Context(t, 10*time.Second), id, true, ""); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	c, err := net.Dial("unix", sender.path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !lines.Scan() || lines.Text() != "bytes 0" {
		t.Fatalf("the process now at the sender's path was sent a receipt: %q", lines.Text())
	}
	if !r.logs.has("no longer belongs to the sender's process") {
		t.Fatal("the skipped receipt was not logged")
	}
}

func TestFirstDropReceiptCarriesAnEmptyIDList(t *testing.T) {
	r := startRig(t, Config{Limits: Limits{Sender: iclock.Bucket{Burst: 1}}})
	sender := listenSock(t, r.socks)
	_, first := sender.userFrame(t, "prompting", "one")
	id, second := sender.userFrame(t, "prompting", "two")
	dial(t, r.p.SocketPath(), first, second)
	f := sender.waitFrame(t, func(f Frame) bool { return f.Status == WireDropped })
	if f.OrigMsgID != id {
		t.Fatalf("dropped receipt about %s, want %s", f.OrigMsgID, id)
	}
	var raw string
	for _, c := range sender.lines() {
		for _, l := range c {
			if strings.Contains(l, `"status":"dropped"`) {
				raw = l
			}
		}
	}
	if !strings.Contains(raw, `"drop_reason":"rate-limited","dropped_msg_ids":[]`) {
		t.Fatalf("dropped receipt %s lacks \"dropped_msg_ids\":[]", raw)
	}
}

func TestIdleNoticesOnePerSubscription(t *testing.T) {
	subscribe := func(t *testing.T, r *rig, s *sock) string {
		id := uuid.NewString()
		dial(t, r.p.SocketPath(), marshal(t, NewNotifyWhenIdle(s.addr, id, "prompting")))
		return id
	}
	notices := func(t *testing.T, s *sock, sub string) []string {
		s.settle(t)
		var states []string
		for _, f := range s.frames(t) {
			if f.Action == ActionPeerIdleNotice && f.OrigMsgID == sub {
				states = append(states, f.State)
			}
		}
		return states
	}
	t.Run("an idle gateway answers idle at once and not again at shutdown", func(t *testing.T) {
		r := startRig(t, Config{})
		s := listenSock(t, r.socks)
		sub := subscribe(t, r, s)
		s.waitFrame(t, func(f Frame) bool { return f.OrigMsgID == sub })
		r.stop()
		if got := notices(t, s, sub); len(got) != 1 || got[0] != IdleStateIdle {
			t.Fatalf("notices = %v, want [idle]", got)
		}
	})
	t.Run("a pending hold defers the notice until it is decided", func(t *testing.T) {
		r := startRig(t, Config{Inbound: PolicyHold})
		s := listenSock(t, r.socks)
		id, b := s.userFrame(t, "prompting", "held")
		dial(t, r.p.SocketPath(), b)
		s.waitFrame(t, func(f Frame) bool { return f.Status == WireHeld })
		sub := subscribe(t, r, s)
		// The subscription is read before the decision: a later frame on
		// another connection of ours proves the peer has read it.
		testutil.Eventually(t, "the idle subscription is in", func() bool { r.p.mu.Lock(); defer r.p.mu.Unlock(); return len(r.p.idleSubs) == 1 })
		if got := notices(t, s, sub); len(got) != 0 {
			t.Fatalf("notices while held = %v, want none", got)
		}
		if err := r.p.Decide(testutil.Context(t, 10*time.Second), id, true, ""); err != nil {
			t.Fatal(err)
		}
		r.stop()
		if got := notices(t, s, sub); len(got) != 1 || got[0] != IdleStateIdle {
			t.Fatalf("notices = %v, want [idle]", got)
		}
	})
	t.Run("a hold pending at shutdown makes the notice exited", func(t *testing.T) {
		r := startRig(t, Config{Inbound: PolicyHold})
		s := listenSock(t, r.socks)
		_, b := s.userFrame(t, "prompting", "held to the end")
		dial(t, r.p.SocketPath(), b)
		s.waitFrame(t, func(f Frame) bool { return f.Status == WireHeld })
		sub := subscribe(t, r, s)
		testutil.Eventually(t, "the idle subscription is in", func() bool { r.p.mu.Lock(); defer r.p.mu.Unlock(); return len(r.p.idleSubs) == 1 })
		r.stop()
		if got := notices(t, s, sub); len(got) != 1 || got[0] != IdleStateExited {
			t.Fatalf("notices = %v, want [exited]", got)
		}
	})
}

func TestReceiptsMustComeFromWhereTheMessageWent(t *testing.T) {
	r := startRig(t, Config{})
	target := listenSock(t, r.socks)
	other := listenSock(t, r.socks)
	id := r.sendTo(t, target, message.ModePrompting, "to target")
	otherID := r.sendTo(t, other, message.ModePrompting, "to other")

	t.Run("a receipt from another socket is ignored, the real one heard", func(t *testing.T) {
		dial(t, r.p.SocketPath(),
			marshal(t, NewStatusReceipt(other.addr, id, WireDenied, "", "")),
			marshal(t, NewStatusReceipt(target.addr, id, WireHeld, "", "")))
		ev := r.next(t, isType(message.EventReceipt))
		if ev.Receipt.MsgID != id || ev.Receipt.Status != message.StatusHeld {
			t.Fatalf("first receipt = %+v, want the genuine held one", ev.Receipt)
		}
		if !r.logs.has("receipt ignored: not from the socket that message went to") {
			t.Fatal("the forged receipt was not logged")
		}
	})
	t.Run("a receipt about a message we never sent is ignored", func(t *testing.T) {
		dial(t, r.p.SocketPath(),
			marshal(t, NewStatusReceipt(target.addr, uuid.NewString(), WireDenied, "", "")),
			marshal(t, NewStatusReceipt(target.addr, id, WireDelivered, "", "")))
		ev := r.next(t, isType(message.EventReceipt))
		if ev.Receipt.MsgID != id || ev.Receipt.Status != message.StatusDelivered {
			t.Fatalf("first receipt = %+v, want delivered for %s", ev.Receipt, id)
		}
	})
	t.Run("a batched drop receipt counts only ids sent to its sender", func(t *testing.T) {
		id2 := r.sendTo(t, target, message.ModePrompting, "to target again")
		f := NewDropReceipt(target.addr, id2, message.DropRateLimited, otherID, id2)
		dial(t, r.p.SocketPath(), marshal(t, f), marshal(t, NewStatusReceipt(other.addr, otherID, WireHeld, "", "")))
		var got []string
		for range 2 {
			ev := r.next(t, isType(message.EventReceipt))
			got = append(got, ev.Receipt.MsgID+" "+ev.Receipt.Status.String())
		}
		want := []string{id2 + " dropped", otherID + " held"}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("receipts = %v, want %v", got, want)
		}
	})
}

func TestHeldMessagesDoNotCountTowardTheQueueCap(t *testing.T) {
	lim := Limits{Sender: iclock.Bucket{Burst: 200}, MaxQueued: 10}
	t.Run("messages past the cap are held, not dropped", func(t *testing.T) {
		r := startRig(t, Config{Inbound: PolicyHold, Limits: lim})
		sender := listenSock(t, r.socks)
		var frames [][]byte
		for i := range lim.MaxQueued + 5 {
			_, b := sender.userFrame(t, "prompting", fmt.Sprint("held ", i))
			frames = append(frames, b)
		}
		// Events are read as they come, as the router does, so only the
		// holds themselves could fill the queue. (dial returns once the
		// peer has read the whole connection.)
		got := make(chan message.Event, len(frames))
		quit := make(chan struct{})
		defer close(quit)
		go func() {
			for n := 0; n < len(frames); {
				select {
				case ev := <-r.events:
					if ev.Type == message.EventHeld || ev.Type == message.EventDrop {
						got <- ev
						n++
					}
				case <-quit:
					return
				}
			}
		}()
		dial(t, r.p.SocketPath(), frames...)
		for range len(frames) {
			if ev := <-got; ev.Type != message.EventHeld {
				t.Fatalf("event %+v, want every message held", ev.Drop)
			}
		}
		if n := len(r.p.Held()); n != len(frames) {
			t.Fatalf("%d held, want %d", n, len(frames))
		}
	})
	t.Run("undelivered messages count: the one at the cap is dropped queue-full", func(t *testing.T) {
		r := startRig(t, Config{Inbound: PolicyAccept, Limits: lim})
		sender := listenSock(t, r.socks)
		var frames [][]byte
		var last string
		for i := range lim.MaxQueued + 1 {
			id, b := sender.userFrame(t, "prompting", fmt.Sprint("queued ", i))
			frames, last = append(frames, b), id
		}
		// Nobody reads the events until all are in: the router is slow.
		dial(t, r.p.SocketPath(), frames...)
		if !testutil.Within(testutil.Patience, func() bool { return len(r.events) == len(frames) }) {
			t.Fatalf("%d events, want %d", len(r.events), len(frames))
		}
		for i := range lim.MaxQueued {
			if ev := <-r.events; ev.Type != message.EventMessage {
				t.Fatalf("event %d = %+v, want a message", i, ev)
			}
		}
		ev := <-r.events
		if ev.Type != message.EventDrop || ev.Drop.MsgID != last || ev.Drop.Reason != message.DropQueueFull {
			t.Fatalf("last event = %+v, want %s dropped queue-full", ev, last)
		}
	})
}

func TestAttachmentSizeCap(t *testing.T) {
	r := startRig(t, Config{})
	tests := []struct {
		name string
		size int64
		ok   bool
	}{
		{"exactly 30 MiB is accepted", 30 << 20, true},
		{"30 MiB and one byte is refused", 30<<20 + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "big.bin")
			f, err := os.Create(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(tt.size); err != nil {
				t.Fatal(err)
			}
			f.Close()
			atts, err := r.p.stage([]message.Attachment{{Path: src}})
			if tt.ok {
				if err != nil || len(atts) != 1 || atts[0].FileSize != tt.size {
					t.Fatalf("stage = %+v, %v", atts, err)
				}
				removeStaged(atts)
				return
			}
			if !errors.Is(err, ErrAttachment) {
				t.Fatalf("err = %v, want ErrAttachment", err)
			}
		})
	}
}

func TestAttachmentCountCap(t *testing.T) {
	r := startRig(t, Config{})
	dir := t.TempDir()
	files := func(n int) []message.Attachment {
		var atts []message.Attachment
		for i := range n {
			p := filepath.Join(dir, strconv.Itoa(i)+".txt")
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			atts = append(atts, message.Attachment{Path: p})
		}
		return atts
	}
	tests := []struct {
		name string
		n    int
		ok   bool
	}{
		{"16 files are accepted", 16, true},
		{"17 files are refused", 17, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			atts, err := r.p.stage(files(tt.n))
			if tt.ok != (err == nil) || (tt.ok && len(atts) != tt.n) {
				t.Fatalf("staging %d files: %d staged, err %v", tt.n, len(atts), err)
			}
		})
	}
}
