package qwen

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// These tests run the real @qwen-code/sdk PeerEndpoint (GATEWAY_INTEROP=1)
// against our inbox and check the receipts the SDK itself reports through
// onReceipt: what a Qwen program sending to the gateway actually hears.

// sdkDriver is a node process holding one PeerEndpoint, driven by JSON
// lines on stdin, reporting JSON lines on stdout.
const sdkDriver = `import { createInterface } from "node:readline";
const peer = await import(process.argv[1]);
const opts = JSON.parse(process.argv[2]);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const ep = await peer.PeerEndpoint.start({
  name: opts.name, qwenHome: opts.home, closeOnExit: true,
  ...(opts.controllerToken ? { controllerToken: opts.controllerToken } : {}),
  onReceipt: (r) => out({ op: "receipt", ...r }),
  onMessage: (m) => out({ op: "message", ...m }),
});
out({ op: "ready", sessionId: ep.sessionId, ipcPath: ep.ipcPath });
for await (const line of createInterface({ input: process.stdin })) {
  const cmd = JSON.parse(line);
  if (cmd.op === "close") break;
  const res = await ep.send({ to: cmd.to, content: cmd.content,
    ...(cmd.controller ? { controller: true } : {}), ...(cmd.fromMode ? { fromMode: cmd.fromMode } : {}) });
  out({ op: "sent", tag: cmd.tag, ...res });
}
await ep.close();
process.exit(0);
`

// sdkLine is one line the driver printed.
type sdkLine struct {
	Op         string `json:"op"`
	Tag        string `json:"tag"`
	Kind       string `json:"kind"` // a send's result
	MsgID      string `json:"msgId"`
	Status     string `json:"status"`
	Previous   string `json:"previous"`
	DropReason string `json:"dropReason"`
	Reason     string `json:"reason"`
	Content    string `json:"content"`
	SessionID  string `json:"sessionId"`
}

type sdkEndpoint struct {
	t     *testing.T
	stdin io.WriteCloser
	lines chan sdkLine
	mu    sync.Mutex
	seen  []sdkLine
}

func startSDKEndpoint(t *testing.T, sdk, home, name, controllerToken string) *sdkEndpoint {
	t.Helper()
	run := testutil.ShortTempDir(t)
	opts, _ := json.Marshal(map[string]string{"name": name, "home": home, "controllerToken": controllerToken})
	cmd := exec.Command("node", "--input-type=module", "-e", sdkDriver, "file://"+sdk, string(opts))
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run, "TMPDIR="+run)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &sdkEndpoint{t: t, stdin: stdin, lines: make(chan sdkLine, 1024)}
	go func() {
		defer close(e.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l sdkLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				e.lines <- l
			}
		}
	}()
	t.Cleanup(func() {
		_, _ = io.WriteString(stdin, `{"op":"close"}`+"\n")
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	e.wait(func(l sdkLine) bool { return l.Op == "ready" })
	return e
}

// wait returns the first line, seen or to come, that pred accepts.
func (e *sdkEndpoint) wait(pred func(sdkLine) bool) sdkLine {
	e.t.Helper()
	e.mu.Lock()
	for _, l := range e.seen {
		if pred(l) {
			e.mu.Unlock()
			return l
		}
	}
	e.mu.Unlock()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case l, ok := <-e.lines:
			if !ok {
				e.t.Fatal("the SDK driver exited")
			}
			e.mu.Lock()
			e.seen = append(e.seen, l)
			e.mu.Unlock()
			if pred(l) {
				return l
			}
		case <-timeout:
			e.t.Fatal("timed out waiting for the SDK")
		}
	}
}

// send asks the SDK to send and returns the msgId it reports.
func (e *sdkEndpoint) send(to, content string, controller bool) string {
	e.t.Helper()
	tag := uuid.NewString()
	b, _ := json.Marshal(map[string]any{"op": "send", "tag": tag, "to": to, "content": content, "controller": controller, "fromMode": "prompting"})
	if _, err := e.stdin.Write(append(b, '\n')); err != nil {
		e.t.Fatal(err)
	}
	l := e.wait(func(l sdkLine) bool { return l.Op == "sent" && l.Tag == tag })
	if l.Kind != "sent" {
		e.t.Fatalf("the SDK's send to %q came back %q", to, l.Kind)
	}
	return l.MsgID
}

// receipt waits for the SDK to report status for msgID.
func (e *sdkEndpoint) receipt(msgID, status string) sdkLine {
	e.t.Helper()
	return e.wait(func(l sdkLine) bool {
		return l.Op == "receipt" && strings.EqualFold(l.MsgID, msgID) && l.Status == status
	})
}

// inbox is our Leg on a fake clock, with an event reader that can be
// stalled (a session not consuming its queue).
type inbox struct {
	*Leg
	clk    *clock.FakeClock
	events chan message.Event
	stall  chan struct{}
	once   sync.Once
}

func startInbox(t *testing.T, home string, cfg Config) *inbox {
	return runInbox(t, home, cfg, false)
}

// startStalledInbox is an inbox whose session takes the first message and
// then stops reading (until release), so that its delivery queue fills.
func startStalledInbox(t *testing.T, home string, cfg Config) *inbox {
	return runInbox(t, home, cfg, true)
}

func runInbox(t *testing.T, home string, cfg Config, stall bool) *inbox {
	t.Helper()
	run := testutil.ShortTempDir(t)
	clk := clock.NewFakeClock(time.Now())
	cfg.Home, cfg.RuntimeDir, cfg.TmpDir, cfg.Clock = home, run, run, clk
	if cfg.Name == "" {
		cfg.Name = "gateway"
	}
	p, err := Register(cfg)
	if err != nil {
		t.Fatal(err)
	}
	in := &inbox{Leg: p, clk: clk, events: make(chan message.Event, 4096), stall: make(chan struct{})}
	if !stall {
		in.release()
	}
	out := make(chan message.Event)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, out) }()
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			select {
			case ev := <-out:
				select {
				case in.events <- ev:
				default: // the test has what it needs; never block the leg
				}
				if ev.Type == message.EventMessage {
					select {
					case <-in.stall:
					case <-ctx.Done():
						return
					}
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		in.release()
		cancel()
		<-read
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return in
}

func (in *inbox) release() { in.once.Do(func() { close(in.stall) }) }

func (in *inbox) wait(t *testing.T, pred func(message.Event) bool) message.Event {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-in.events:
			if pred(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("timed out waiting for an event of our inbox")
		}
	}
}

func qwenHome(t *testing.T) string {
	t.Helper()
	home := filepath.Join(t.TempDir(), "qwen")
	if err := safefile.EnsureDir(SessionsDir(home)); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestSDKSendsToOurInboxAndHearsTheSpecsReceipts(t *testing.T) {
	sdk := sdkPeer(t)

	t.Run("a message under mode parity is delivered", func(t *testing.T) {
		home := qwenHome(t)
		in := startInbox(t, home, Config{})
		e := startSDKEndpoint(t, sdk, home, "sdk-sender", "")
		id := e.send("gateway", "hello gateway", false)
		e.receipt(id, "delivered")
		ev := in.wait(t, func(ev message.Event) bool { return ev.Type == message.EventMessage })
		if ev.Message.Body != "hello gateway" || ev.Message.FromName != "sdk-sender" || ev.Message.Auth != message.AuthPeer {
			t.Fatalf("we got %+v", ev.Message)
		}
	})

	t.Run("--inbound refuse answers refused", func(t *testing.T) {
		home := qwenHome(t)
		startInbox(t, home, Config{Inbound: PolicyRefuse})
		e := startSDKEndpoint(t, sdk, home, "sdk-sender", "")
		id := e.send("gateway", "please refuse", false)
		if r := e.receipt(id, "refused"); r.Previous != "pending" {
			t.Fatalf("refused after %q", r.Previous)
		}
	})

	t.Run("a held message that is denied answers held, then denied", func(t *testing.T) {
		home := qwenHome(t)
		in := startInbox(t, home, Config{Inbound: PolicyHold})
		e := startSDKEndpoint(t, sdk, home, "sdk-sender", "")
		id := e.send("gateway", "hold me", false)
		e.receipt(id, "held")
		if err := in.Decide(context.Background(), id, false, ""); err != nil {
			t.Fatal(err)
		}
		if r := e.receipt(id, "denied"); r.Previous != "held" {
			t.Fatalf("denied after %q", r.Previous)
		}
	})

	t.Run("a held message whose hold runs out answers expired", func(t *testing.T) {
		home := qwenHome(t)
		in := startInbox(t, home, Config{Inbound: PolicyHold, HeldExpiry: time.Minute})
		e := startSDKEndpoint(t, sdk, home, "sdk-sender", "")
		id := e.send("gateway", "let me expire", false)
		e.receipt(id, "held")
		in.clk.Advance(time.Minute + time.Second)
		if r := e.receipt(id, "expired"); r.Previous != "held" {
			t.Fatalf("expired after %q", r.Previous)
		}
	})

	t.Run("a message pinned to a session we do not hold answers misaddressed", func(t *testing.T) {
		home := qwenHome(t)
		in := startInbox(t, home, Config{})
		// A stale record for our inbox, as a session id swap would leave:
		// the SDK pins its send to that id.
		rec := readRecord(t, in.RecordPath())
		rec.SessionID, rec.Name = uuid.NewString(), "stale-gateway"
		b, err := rec.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := safefile.WriteAtomic(filepath.Join(SessionsDir(home), RecordFileName(rec.PID, NewSuffix())), b); err != nil {
			t.Fatal(err)
		}
		e := startSDKEndpoint(t, sdk, home, "sdk-sender", "")
		id := e.send("stale-gateway", "for an old session", false)
		e.receipt(id, "misaddressed")
	})

	t.Run("a burst past the sender's bucket is dropped rate-limited, the later drops in one coalesced receipt", func(t *testing.T) {
		home := qwenHome(t)
		in := startInbox(t, home, Config{})
		e := startSDKEndpoint(t, sdk, home, "sdk-sender", "")
		lim := DefaultLimits()
		var ids []string
		for i := range lim.Sender.Burst + 3 {
			ids = append(ids, e.send("gateway", fmt.Sprintf("burst %d", i), false))
		}
		for _, id := range ids[:lim.Sender.Burst] {
			e.receipt(id, "delivered")
		}
		// The first drop is answered at once; the next two wait one trail
		// and go out as one receipt about the first of them, listing the
		// other in droppedMsgIds, which the SDK settles too.
		first := e.receipt(ids[lim.Sender.Burst], "dropped")
		if first.DropReason != "rate-limited" {
			t.Fatalf("dropped for %q", first.DropReason)
		}
		for range 3 {
			in.wait(t, func(ev message.Event) bool { return ev.Type == message.EventDrop })
		}
		in.clk.Advance(DropReceiptTrail)
		for _, id := range ids[lim.Sender.Burst+1:] {
			if r := e.receipt(id, "dropped"); r.DropReason != "rate-limited" || r.Previous != "pending" {
				t.Fatalf("%s: %+v", id, r)
			}
		}
	})

	t.Run("a message past a full delivery queue is dropped queue-full", func(t *testing.T) {
		home := qwenHome(t)
		in := startStalledInbox(t, home, Config{Inbound: PolicyAccept})
		e := startSDKEndpoint(t, sdk, home, "sdk-sender", "")
		lim := DefaultLimits()
		// The buckets let 30 through at once; a minute refills them (and
		// lets coalesced drop receipts go). The stalled session holds one
		// message, the delivery loop one more, the queue MaxQueued. The
		// SDK's send returns once we closed the connection, after the
		// frame was admitted, so each round is judged before the clock
		// moves.
		var ids []string
		for round := range 2 {
			for i := range lim.Sender.Burst {
				ids = append(ids, e.send("gateway", fmt.Sprintf("round %d, message %d", round, i), false))
			}
			in.clk.Advance(time.Minute)
		}
		full := e.wait(func(l sdkLine) bool { return l.Op == "receipt" && l.Status == "dropped" })
		if full.DropReason != "queue-full" {
			t.Fatalf("dropped for %q, want queue-full", full.DropReason)
		}
		delivered := 0
		for _, id := range ids {
			r := e.wait(func(l sdkLine) bool { return l.Op == "receipt" && strings.EqualFold(l.MsgID, id) })
			switch {
			case r.Status == "delivered":
				delivered++
			case r.Status != "dropped" || r.DropReason != "queue-full":
				t.Fatalf("%s: %+v", id, r)
			}
		}
		if delivered > lim.MaxQueued+2 {
			t.Fatalf("%d delivered, more than the queue and the two in hand", delivered)
		}
	})
}

func TestSDKControllerTokenReachesOurInbox(t *testing.T) {
	sdk := sdkPeer(t)
	home := qwenHome(t)
	grants := NewControllers(filepath.Join(t.TempDir(), "controllers.json"), nil)
	tok, grant, err := grants.Add("voice front-end")
	if err != nil {
		t.Fatal(err)
	}
	// Our own review class differs from what the SDK asserts: only the
	// grant delivers at once.
	in := startInbox(t, home, Config{Mode: message.ModeBypass, Controllers: []ControllerVerifier{grants}})
	e := startSDKEndpoint(t, sdk, home, "voice", string(tok))

	t.Run("a controller send is delivered and classified controller", func(t *testing.T) {
		id := e.send("gateway", "from the controller", true)
		e.receipt(id, "delivered")
		ev := in.wait(t, func(ev message.Event) bool {
			return ev.Type == message.EventMessage && strings.EqualFold(ev.Message.ID, id)
		})
		if ev.Message.Auth != message.AuthController || ev.Message.Controller != grant.Label {
			t.Fatalf("auth = %q, controller %q; want controller %q", ev.Message.Auth, ev.Message.Controller, grant.Label)
		}
	})
	t.Run("the same send without the grant is held (mode mismatch)", func(t *testing.T) {
		id := e.send("gateway", "as a plain peer", false)
		e.receipt(id, "held")
	})
	t.Run("after the grant is removed, its token gets nothing in", func(t *testing.T) {
		if _, ok, err := grants.Remove(grant.ID); err != nil || !ok {
			t.Fatalf("remove: %v %v", ok, err)
		}
		gone := e.send("gateway", "from a revoked controller", true)
		// The SDK waits for each connection to close before the next send,
		// so the revoked one was read and turned away before this arrives.
		after := e.send("gateway", "after the revocation", false)
		e.receipt(after, "held")
		for _, h := range in.Held() {
			if strings.EqualFold(h.Message.ID, gone) {
				t.Fatalf("the revoked token's message was taken: %+v", h)
			}
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, l := range e.seen {
			if l.Op == "receipt" && strings.EqualFold(l.MsgID, gone) {
				t.Fatalf("the revoked token's message drew a receipt: %+v", l)
			}
		}
	})
}

func readRecord(t *testing.T, path string) Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
