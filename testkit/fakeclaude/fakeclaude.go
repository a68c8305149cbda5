package fakeclaude

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/standin"
)

// Config sets up a fake session.
type Config struct {
	Name       string
	ConfigDir  string         // sessions live in ConfigDir/sessions
	RuntimeDir string         // sockets in RuntimeDir/cc-socks
	Mode       message.Mode   // review class; default prompting
	NoKey      bool           // write no key file (senders then send no auth line)
	Limits     claude.Limits  // admission; zero is Claude Code's defaults (a benchmark's sink lifts them)
	OnReceived func(Received) // called with each user frame admitted, after it is recorded
	Listen     uds.Limits     // the socket's caps; zero is the defaults
	// BridgeSessionID is written to the registry entry, as a signed-in
	// Claude Code session with remote control writes its cloud id.
	BridgeSessionID string
}

// Received is one user frame that reached the fake.
type Received struct {
	Auth     message.AuthClass
	Frame    claude.Frame
	Content  claude.Content
	Held     bool
	SenderID int // kernel pid of the connecting process
}

// Peer is a running fake session.
type Peer struct {
	cfg       Config
	holder    *standin.Process // the process the registry names, listener of record
	pid       int
	sessionID string
	socket    string
	addr      string
	token     string
	guard     *claude.Guard

	mu       sync.Mutex
	changed  chan struct{}
	received []Received
	control  []claude.Frame // control frames that arrived (receipts, notices)
	ctlAuth  []message.AuthClass
	replyTo  map[string]string
	// Like Claude Code 2.1.332, idle subscriptions wait while a held
	// message is undecided.
	pendingHolds int
	idleWaiters  []claude.Frame
}

// Start registers a fake session and serves it until the test ends.
func Start(t testing.TB, cfg Config) *Peer {
	t.Helper()
	if cfg.Mode == message.ModeUnknown {
		cfg.Mode = message.ModePrompting
	}
	// The registry must name a live pid other than the test's own, with a
	// matching start time, and that process must be the socket's listener
	// as the kernel reports it (dialers check): a stand-in child.
	holder := standin.Start(t)
	p := &Peer{cfg: cfg, holder: holder, pid: holder.PID, sessionID: uuid.NewString(),
		changed: make(chan struct{}), replyTo: map[string]string{}}
	p.socket = claude.SocketPath(cfg.RuntimeDir, "", p.pid, os.Geteuid())
	p.addr = addressing.UDS(p.socket)
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	p.token = hex.EncodeToString(b)
	lim := cfg.Limits
	if lim == (claude.Limits{}) {
		lim = claude.DefaultLimits()
	}
	p.guard = claude.NewGuard(lim, clock.Real{}, func() []string { return nil })

	if err := safefile.EnsureDir(filepath.Dir(p.socket)); err != nil {
		t.Fatal(err)
	}
	ln, err := uds.Listen(p.socket, cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	if err := handOver(ln, holder); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	if err := p.register(); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ln.Serve(ctx, p.serve)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		p.Deregister()
	})
	return p
}

// handOver makes the stand-in the listener of record of ln.
func handOver(ln *uds.Listener, holder *standin.Process) error {
	f, err := ln.File()
	if err != nil {
		return err
	}
	defer f.Close()
	return holder.Listen(f)
}

func (p *Peer) sessionsDir() string { return filepath.Join(p.cfg.ConfigDir, "sessions") }

func (p *Peer) register() error {
	ticks, err := uds.StartTicks(p.pid)
	if err != nil {
		return err
	}
	id, err := uds.Identify(p.pid)
	if err != nil {
		return err
	}
	procStart := strconv.FormatUint(ticks, 10)
	domain := fmt.Sprintf("linux:%s:pid:[%d]", id.MachineID, id.PidNS)
	if err := safefile.EnsureDir(p.sessionsDir()); err != nil {
		return err
	}
	if !p.cfg.NoKey {
		kb, _ := json.Marshal(claude.KeyFile{PeerToken: p.token, ProcStart: procStart, PidDomain: domain})
		if err := safefile.WriteAtomic(filepath.Join(p.sessionsDir(), claude.KeyFileName(p.pid, p.socket)), kb); err != nil {
			return err
		}
	}
	now := time.Now().UnixMilli()
	eb, _ := json.Marshal(claude.Entry{
		PID: p.pid, SessionID: p.sessionID, Cwd: "/", StartedAt: now, ProcStart: procStart,
		Version: "fake", PeerProtocol: 1, PeerFeatures: []string{"notify_idle"}, Kind: "interactive",
		Entrypoint: "cli", PidDomain: domain, MessagingSocketPath: p.socket, Name: p.cfg.Name,
		NameSource: "user", Status: "idle", UpdatedAt: now, BridgeSessionID: p.cfg.BridgeSessionID,
	})
	return safefile.WriteAtomic(filepath.Join(p.sessionsDir(), strconv.Itoa(p.pid)+".json"), eb)
}

// Deregister removes the registry entry and key file, as the real CLI does
// on exit.
func (p *Peer) Deregister() {
	_ = os.Remove(filepath.Join(p.sessionsDir(), strconv.Itoa(p.pid)+".json"))
	_ = os.Remove(filepath.Join(p.sessionsDir(), claude.KeyFileName(p.pid, p.socket)))
}

// Address is the fake's uds: address; PID its registered pid; SessionID its id.
func (p *Peer) Address() string   { return p.addr }
func (p *Peer) PID() int          { return p.pid }
func (p *Peer) SessionID() string { return p.sessionID }
func (p *Peer) Name() string      { return p.cfg.Name }

func (p *Peer) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Peer) serve(ctx context.Context, c *uds.Conn) {
	auth := message.AuthUnauthenticated
	for first := true; ; first = false {
		line, err := c.ReadLine()
		if err != nil {
			return
		}
		l, err := claude.ParseLine(line)
		if err != nil {
			continue
		}
		if l.Auth != nil {
			if first && l.Auth.Token == p.token {
				auth = message.AuthPeer
			}
			continue
		}
		f := *l.Frame
		switch f.Type {
		case claude.TypeUser:
			p.onUser(ctx, auth, c.Cred.PID, f)
		case claude.TypeControl:
			p.onControl(ctx, auth, f)
		}
	}
}

func (p *Peer) onUser(ctx context.Context, auth message.AuthClass, pid int, f claude.Frame) {
	if f.Message == nil {
		return
	}
	c := claude.ParseContent(f.Message.Content)
	reply, _ := addressing.SocketOf(f.From)
	if reason, dropped := p.guard.Admit(f.From, c.Envelope.Body, c.Envelope.HopChain, 0); dropped {
		p.send(ctx, reply, claude.NewDropReceipt(p.addr, f.MsgID, reason))
		return
	}
	held := false
	switch {
	case c.Attested && c.Envelope.Mode() != p.cfg.Mode:
		held = true
	case !c.Attested && p.cfg.Mode == message.ModeBypass:
		held = true
	}
	p.mu.Lock()
	p.received = append(p.received, Received{Auth: auth, Frame: f, Content: c, Held: held, SenderID: pid})
	p.replyTo[f.MsgID] = reply
	if held {
		p.pendingHolds++
	}
	p.notify()
	p.mu.Unlock()
	if p.cfg.OnReceived != nil {
		p.cfg.OnReceived(Received{Auth: auth, Frame: f, Content: c, Held: held, SenderID: pid})
	}
	if held {
		p.send(ctx, reply, claude.NewStatusReceipt(p.addr, f.MsgID, claude.WireHeld, "", ""))
	}
}

func (p *Peer) answerIdle(ctx context.Context, subs []claude.Frame) {
	for _, f := range subs {
		reply, _ := addressing.SocketOf(f.From)
		p.send(ctx, reply,
			claude.NewIdleNotice(p.addr, f.MsgID, claude.IdleStateIdle, time.Now().UnixMilli(), "done", p.cfg.Mode.String()))
	}
}

func (p *Peer) onControl(ctx context.Context, auth message.AuthClass, f claude.Frame) {
	p.mu.Lock()
	p.control = append(p.control, f)
	p.ctlAuth = append(p.ctlAuth, auth)
	p.notify()
	p.mu.Unlock()
	if f.Action == claude.ActionNotifyWhenIdle {
		p.mu.Lock()
		deferred := p.pendingHolds > 0
		if deferred {
			p.idleWaiters = append(p.idleWaiters, f)
		}
		p.mu.Unlock()
		if !deferred {
			p.answerIdle(ctx, []claude.Frame{f})
		}
	}
}

func (p *Peer) send(ctx context.Context, path string, f claude.Frame) {
	b, err := f.Marshal()
	if err != nil || path == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = uds.DialWrite(ctx, path, append(b, '\n'))
}

// Decide releases (delivered) or denies (denied) a held message; the last
// decision answers the idle subscriptions the holds deferred.
func (p *Peer) Decide(ctx context.Context, msgID string, release bool) {
	p.mu.Lock()
	reply := p.replyTo[msgID]
	var waiters []claude.Frame
	if p.pendingHolds > 0 {
		p.pendingHolds--
		if p.pendingHolds == 0 {
			waiters, p.idleWaiters = p.idleWaiters, nil
		}
	}
	p.mu.Unlock()
	st := claude.WireDenied
	if release {
		st = claude.WireDelivered
	}
	p.send(ctx, reply, claude.NewStatusReceipt(p.addr, msgID, st, "", ""))
	p.answerIdle(ctx, waiters)
}

// Received lists the user frames that arrived.
func (p *Peer) Received() []Received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Received(nil), p.received...)
}

// Control lists the control frames that arrived.
func (p *Peer) Control() []claude.Frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]claude.Frame(nil), p.control...)
}

// ErrTimeout is returned by the Wait methods.
var ErrTimeout = errors.New("fakeclaude: timed out waiting")

// WaitReceived waits for a user frame matching pred.
func (p *Peer) WaitReceived(ctx context.Context, pred func(Received) bool) (Received, error) {
	for {
		p.mu.Lock()
		for _, r := range p.received {
			if pred(r) {
				p.mu.Unlock()
				return r, nil
			}
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return Received{}, ErrTimeout
		case <-ch:
		}
	}
}

// WaitControl waits for a control frame matching pred.
func (p *Peer) WaitControl(ctx context.Context, pred func(claude.Frame) bool) (claude.Frame, error) {
	f, _, err := p.WaitControlAuth(ctx, pred)
	return f, err
}

// WaitControlAuth waits for a control frame matching pred and says how its
// connection authenticated.
func (p *Peer) WaitControlAuth(ctx context.Context, pred func(claude.Frame) bool) (claude.Frame, message.AuthClass, error) {
	for {
		p.mu.Lock()
		for i, f := range p.control {
			if pred(f) {
				a := p.ctlAuth[i]
				p.mu.Unlock()
				return f, a, nil
			}
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return claude.Frame{}, "", ErrTimeout
		case <-ch:
		}
	}
}

// Send sends text from this fake to the socket at toAddr (uds:...), with the
// target's token when its key file is in the same sessions directory.
func (p *Peer) Send(ctx context.Context, toAddr, text string, mode message.Mode) (string, error) {
	id := uuid.NewString()
	env := claude.Envelope{From: p.addr, FromName: p.cfg.Name, FromMode: mode.String(), Body: text}
	return id, p.SendFrame(ctx, toAddr, claude.NewUserFrame(p.addr, id, env, nil))
}

// SendFromProcess is Send written by the fake's registered process (its
// stand-in), as Claude Code writes from its own: the receiver's peer
// credentials name the process the registry names. (Send writes from the
// test's process, which holds the fake's socket, so the receiver can vet
// the reply address and send receipts; the stand-in does not hold it.)
func (p *Peer) SendFromProcess(ctx context.Context, toAddr, text string, mode message.Mode) (string, error) {
	id := uuid.NewString()
	env := claude.Envelope{From: p.addr, FromName: p.cfg.Name, FromMode: mode.String(), Body: text}
	return id, p.sendFrame(ctx, toAddr, claude.NewUserFrame(p.addr, id, env, nil), true)
}

// SendFrameFromProcess is SendFrame written by the fake's registered
// process, as SendFromProcess is.
func (p *Peer) SendFrameFromProcess(ctx context.Context, toAddr string, f claude.Frame) error {
	return p.sendFrame(ctx, toAddr, f, true)
}

// SendFrame sends any frame, with an auth line when the target has a key.
func (p *Peer) SendFrame(ctx context.Context, toAddr string, f claude.Frame) error {
	return p.sendFrame(ctx, toAddr, f, false)
}

func (p *Peer) sendFrame(ctx context.Context, toAddr string, f claude.Frame, fromProcess bool) error {
	path, _ := addressing.SocketOf(toAddr)
	fb, err := f.Marshal()
	if err != nil {
		return err
	}
	var payload []byte
	matches, _ := filepath.Glob(filepath.Join(p.sessionsDir(), "*."+keyHash(path)+".key"))
	if len(matches) == 1 {
		if b, err := os.ReadFile(matches[0]); err == nil {
			if k, err := claude.ParseKeyFile(b); err == nil {
				ab, _ := claude.Auth{Type: claude.TypeAuth, Token: k.PeerToken}.Marshal()
				payload = append(ab, '\n')
			}
		}
	}
	payload = append(append(payload, fb...), '\n')
	if !fromProcess {
		return uds.DialWrite(ctx, path, payload)
	}
	return p.write(ctx, path, payload)
}

// write sends payload to the socket at path from the fake's stand-in.
func (p *Peer) write(ctx context.Context, path string, payload []byte) error {
	c, err := p.holder.Dial(path)
	if err != nil {
		return err
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	} else {
		_ = c.SetDeadline(time.Now().Add(uds.DefaultDialTimeout))
	}
	if _, err := c.Write(payload); err != nil {
		return err
	}
	return c.CloseWrite()
}

func keyHash(path string) string {
	name := claude.KeyFileName(0, path)
	return strings.TrimSuffix(strings.TrimPrefix(name, "0."), ".key")
}
