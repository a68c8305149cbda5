package qwen

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/transport/uds"
)

// PeerConfig sets up a Peer. Zero values take the defaults noted.
type PeerConfig struct {
	Name       string       // registered name; default "gateway"
	Home       string       // Qwen's home ($QWEN_HOME or ~/.qwen); required
	RuntimeDir string       // $XDG_RUNTIME_DIR
	TmpDir     string       // Node's temp dir (NodeTmpDir); default /tmp
	Cwd        string       // default the working directory
	Mode       message.Mode // our review class for mode parity; default prompting
	Inbound    Policy       // PolicyUnset: parity
	HeldExpiry time.Duration
	Clock      clock.Clock
	Logger     *slog.Logger
	Socket     uds.Limits
	// Controllers are the grants whose tokens our inbox accepts as
	// trusted programs: the gateway's own store, and Qwen's own.
	Controllers []ControllerVerifier
	// ReceiptSent, when set, hears the status of each receipt written to a
	// sender (for the receipts counter); it must not block.
	ReceiptSent func(message.Status)
}

// Peer is the gateway registered as a Qwen Code session of kind external.
type Peer struct {
	cfg        PeerConfig
	log        *slog.Logger
	clk        clock.Clock
	pid        int
	sessionID  string
	socketPath string
	recPath    string
	sessions   string
	token      Token
	childToken Token
	auth       Authenticator
	gate       *Gate
	ledger     *Ledger
	mirror     *Mirror
	drops      *DropReceipts
	ln         *uds.Listener
	facts      ProcessFacts
	al         *aliases

	sendSem chan struct{} // bounds receipt dials, as Qwen bounds concurrent sends

	outbox *uds.Outbox
	wg     sync.WaitGroup // receipt dials in flight
}

// maxReceiptDials bounds concurrent receipt connections; past it a receipt
// is lost (receipts are best effort on the receiver's side).
const maxReceiptDials = 64

// sendTimeout bounds one dial + write, as Qwen Code's 5 s.
const sendTimeout = 5 * time.Second

// Register binds the inbox and writes the record. Run serves it and
// removes the record when its context ends.
func Register(cfg PeerConfig) (*Peer, error) {
	if cfg.Home == "" {
		return nil, errors.New("qwen: no home directory")
	}
	if cfg.Name == "" {
		cfg.Name = "gateway"
	}
	if cfg.TmpDir == "" {
		cfg.TmpDir = "/tmp"
	}
	if cfg.Cwd == "" {
		cfg.Cwd, _ = os.Getwd()
	}
	if cfg.Mode == message.ModeUnknown {
		cfg.Mode = message.ModePrompting
	}
	if cfg.HeldExpiry == 0 {
		cfg.HeldExpiry = 5 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// Spec §2: the 1 MiB cap counts UTF-16 code units, and only a line
	// that is accepted (the auth line, a frame that parses) extends the
	// 30 s deadline.
	cfg.Socket.Units, cfg.Socket.Rearm = uds.UnitUTF16, uds.RearmOnMark
	p := &Peer{
		cfg: cfg, log: cfg.Logger.With("leg", "qwen"), clk: cfg.Clock, pid: os.Getpid(),
		sessionID: uuid.NewString(), sessions: SessionsDir(cfg.Home), facts: HostFacts{},
		sendSem: make(chan struct{}, maxReceiptDials), al: newAliases(),
		outbox: uds.NewOutbox(message.ProtocolQwen, cfg.Clock.Now),
	}
	p.token, p.childToken = NewIPCToken(), NewChildToken()
	p.auth = Authenticator{IPCToken: p.token, ChildToken: p.childToken, Controllers: cfg.Controllers}
	p.ledger = NewLedger(cfg.Clock)
	p.mirror = NewMirror(cfg.Clock, Limits{})
	p.drops = NewDropReceipts(cfg.Clock, p.sendDropReceipt)
	p.gate = NewGate(Config{
		Clock: cfg.Clock,
		Policy: func(sid string) (Policy, error) {
			if _, ok := p.al.bySession(sid); ok {
				return PolicyAccept, nil // the session behind the alias applies its own
			}
			return cfg.Inbound, nil
		},
		ReviewClass: func(string) message.Mode { return cfg.Mode },
		HeldExpiry:  func(string) time.Duration { return cfg.HeldExpiry },
		OwnsSession: func(sid string) bool {
			if sid == p.sessionID {
				return true
			}
			_, ok := p.al.bySession(sid)
			return ok
		},
		Report:  p.report,
		Dropped: p.dropped,
	})
	if err := safefile.EnsureDir(p.sessions); err != nil {
		return nil, fmt.Errorf("qwen sessions directory: %w", err)
	}
	if err := p.bind(); err != nil {
		return nil, err
	}
	if err := p.writeRecord(); err != nil {
		p.ln.Close()
		return nil, err
	}
	p.log.Info("registered as a Qwen Code peer", "name", cfg.Name, "socket", p.socketPath,
		"session_id", p.sessionID, "record", p.recPath)
	return p, nil
}

// bind takes the first inbox path that binds, or its sibling when a live
// listener of another namespace holds the pid-keyed name.
func (p *Peer) bind() error {
	var errs []error
	for _, path := range InboxCandidates(p.cfg.RuntimeDir, p.cfg.TmpDir, p.pid, NewSocketNonce()) {
		if err := safefile.EnsureDir(filepath.Dir(path)); err != nil {
			errs = append(errs, err)
			continue
		}
		ln, err := uds.Listen(path, p.cfg.Socket)
		if errors.Is(err, uds.ErrInUse) || errors.Is(err, uds.ErrBusy) {
			if sib, ok := SiblingSocketPath(path, NewSuffix()); ok {
				path = sib
				ln, err = uds.Listen(path, p.cfg.Socket)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.ln, p.socketPath = ln, path
		return nil
	}
	return fmt.Errorf("qwen inbox: no candidate path binds: %w", errors.Join(errs...))
}

func (p *Peer) writeRecord() error {
	procStart, ok := ProcStartToken(p.pid)
	if !ok {
		return errors.New("qwen record: cannot read our own procStart")
	}
	ns, err := uds.PidNamespace(p.pid)
	if err != nil {
		return fmt.Errorf("qwen record: %w", err)
	}
	rec := Record{
		PID: p.pid, ProcStart: procStart, PidNS: ns, SessionID: p.sessionID, Cwd: p.cfg.Cwd,
		Name: p.cfg.Name, StartedAt: p.clk.Now().UnixMilli(), Kind: "external",
		IPCPath: p.socketPath, IPCToken: p.token,
	}
	b, err := rec.Marshal()
	if err != nil {
		return err
	}
	path := filepath.Join(p.sessions, RecordFileName(p.pid, ""))
	err = safefile.CreateExclusive(path, b)
	if errors.Is(err, fs.ErrExist) {
		old, rerr := safefile.ReadCapped(path, MaxRecordBytes)
		if rerr == nil && MayReplace(old, p.pid, p.facts) {
			err = safefile.WriteAtomic(path, b)
		} else {
			// Not provably ours to replace: the spec's <pid>-<8 hex>.json.
			path = filepath.Join(p.sessions, RecordFileName(p.pid, NewSuffix()))
			err = safefile.CreateExclusive(path, b)
		}
	}
	if err != nil {
		return fmt.Errorf("qwen record: %w", err)
	}
	p.recPath = path
	return nil
}

// Name is the leg's protocol.
func (p *Peer) Name() message.Protocol { return message.ProtocolQwen }

// SocketPath is our inbox; SessionID our session; RecordPath our record.
func (p *Peer) SocketPath() string { return p.socketPath }
func (p *Peer) SessionID() string  { return p.sessionID }
func (p *Peer) RecordPath() string { return p.recPath }

// ChildEnv is the environment a process the gateway starts gets, so its
// messages count as our own process's.
func (p *Peer) ChildEnv() []string { return ChildEnv(p.socketPath, p.childToken) }

// Ready reports whether the inbox is served and the record in place.
func (p *Peer) Ready() error {
	if !p.outbox.Attached() {
		return errors.New("not serving yet")
	}
	if _, err := os.Lstat(p.recPath); err != nil {
		return fmt.Errorf("record missing: %w", err)
	}
	return nil
}

// Run serves the inbox and hands what arrives to out until ctx ends; then
// it settles what waits (expired), flushes drop receipts and removes the
// record.
func (p *Peer) Run(ctx context.Context, out chan<- message.Event) error {
	p.outbox.Attach(out)
	deliveries := make(chan struct{})
	go func() {
		defer close(deliveries)
		for in := range p.gate.Deliveries() {
			m := p.toMessage(in)
			p.emit(ctx, message.Event{Type: message.EventMessage, Message: &m})
		}
	}()
	err := p.ln.Serve(ctx, p.serveConn)
	p.gate.Shutdown()
	<-deliveries
	flushed := make(chan struct{})
	go func() { p.drops.Flush(); close(flushed) }()
	select {
	case <-flushed:
	case <-time.After(time.Second):
	}
	p.drops.Close()
	p.outbox.Close()
	p.removeAliases()
	p.wg.Wait()
	if rerr := os.Remove(p.recPath); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		p.log.Warn("removing the qwen record failed", "file", p.recPath, "err", rerr)
	}
	// A per-start qwen-socks-<nonce> directory would litter $TMPDIR: remove
	// it when empty (os.Remove refuses a directory that is not).
	if dir := filepath.Dir(p.socketPath); IsNonceDirName(filepath.Base(dir)) {
		_ = os.Remove(dir)
	}
	p.log.Info("deregistered Qwen Code peer", "socket", p.socketPath)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// emit hands an event to the router (see uds.Outbox).
func (p *Peer) emit(ctx context.Context, ev message.Event) { p.outbox.Emit(ctx, ev) }

var originAuth = map[AuthKind]message.AuthClass{
	AuthPeer: message.AuthPeer, AuthChild: message.AuthChild, AuthController: message.AuthController,
}

func (p *Peer) toMessage(in Inbound) message.Message {
	f := in.Frame
	m := message.Message{
		ID: f.MsgID, From: addressing.UDS(f.From), FromName: f.FromName, Body: f.Content, Mode: f.FromMode,
		Attested: f.FromMode != message.ModeUnknown, Auth: originAuth[in.Origin.Kind],
		Protocol: message.ProtocolQwen, Time: p.clk.Now(), ToSessionID: f.ToSessionID, HopChain: f.HopChain,
	}
	if in.Origin.Kind == AuthController {
		m.Controller = in.Origin.Controller.Label
	}
	if al, ok := p.al.bySession(f.ToSessionID); ok {
		m.AliasOf, m.ToName = al.origin.Address, al.origin.Name
		p.al.remember(f.MsgID, replyTo{from: f.From, token: f.ReplyToken})
	}
	return m
}

// serveConn authenticates the first non-blank line and then reads frames.
// A connection that closes with nothing is a liveness probe.
func (p *Peer) serveConn(ctx context.Context, c *uds.Conn) {
	var origin Origin
	authed := false
	for {
		line, err := c.ReadLine()
		if err != nil {
			return
		}
		if IsBlank(line) {
			continue
		}
		if !authed {
			o, ok := p.auth.Authenticate(line)
			if !ok {
				p.log.Debug("qwen inbox: connection without an accepted auth line closed", "pid", c.Cred.PID)
				return
			}
			origin, authed = o, true
			c.Mark()
			continue
		}
		l, err := ParseLine(line)
		if err != nil {
			p.log.Debug("qwen inbox: bad line ignored", "err", err)
			continue
		}
		if l.User != nil || l.Status != nil {
			c.Mark() // junk (and a second auth line) does not extend the deadline
		}
		switch {
		case l.User != nil:
			in := Inbound{Frame: *l.User, Origin: origin}
			if d := p.gate.Admit(in); d.Outcome == OutcomeHeld && d.Cause != 0 {
				m := p.toMessage(in)
				p.notice(message.Event{Type: message.EventHeld, Held: &message.Held{
					Message: m, Reason: d.Cause.String(), Since: p.clk.Now(), Expires: p.clk.Now().Add(p.cfg.HeldExpiry)}})
			}
		case l.Status != nil:
			moves := p.ledger.Apply(*l.Status)
			p.mirror.Observe(moves)
			for _, mv := range moves {
				rc := mv.Receipt
				rc.From = addressing.UDS(l.Status.From)
				p.emit(ctx, message.Event{Type: message.EventReceipt, Receipt: &rc})
			}
		}
	}
}

// report sends one receipt the gate asked for, best effort.
func (p *Peer) report(r Report) {
	to := r.Inbound.Frame.From
	if to == "" || !IsLocalIPCPath(to) {
		return
	}
	if _, ok := p.al.bySession(r.Inbound.Frame.ToSessionID); ok && r.Status == StatusDelivered {
		// Accepted at an alias only means handed to the bridge: the real
		// outcome comes from the session behind it (Relay).
		return
	}
	p.dial(to, r.Inbound.Frame.ReplyToken, NewStatusFrame(r.Status, r.Inbound.Frame.MsgID, p.socketPath))
}

func (p *Peer) dropped(in Inbound, reason DropReason) {
	p.drops.Note(in, reason)
	m := p.toMessage(in)
	p.notice(message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: m.ID, From: m.From, Reason: reason.String()}})
}

// notice hands a drop or hold notice to the router without waiting
// (uds.Outbox.Offer): a router slow to read never stalls a sender's
// connection, and when its queue is full the notice is lost (the sender's
// receipt does not depend on it).
func (p *Peer) notice(ev message.Event) {
	if !p.outbox.Offer(ev) {
		p.log.Warn("qwen inbox: notice lost, the router is not keeping up", "type", ev.Type)
	}
}

func (p *Peer) sendDropReceipt(r DropReceipt) {
	if r.To == "" || !IsLocalIPCPath(r.To) {
		return
	}
	p.dial(r.To, r.ReplyToken, r.Frame(p.socketPath))
}

// dial writes one frame on its own connection in the background, at most
// maxReceiptDials at once; past that the receipt is lost and logged.
func (p *Peer) dial(to string, token Token, f Frame) {
	payload, err := Payload(token, f)
	if err != nil {
		p.log.Info("qwen receipt not encoded", "err", err)
		return
	}
	select {
	case p.sendSem <- struct{}{}:
	default:
		p.log.Info("qwen receipt lost: too many in flight", "to", to)
		return
	}
	p.wg.Add(1)
	go func() {
		defer func() { <-p.sendSem; p.wg.Done() }()
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		if err := uds.DialWrite(ctx, to, payload); err != nil {
			p.log.Debug("qwen receipt not delivered", "to", to, "err", err)
			return
		}
		if sf, ok := f.(StatusFrame); ok && p.cfg.ReceiptSent != nil {
			p.cfg.ReceiptSent(sf.Status.Model())
		}
	}()
}

// Held lists messages our inbox holds.
func (p *Peer) Held() []message.Held {
	hs := p.gate.Held()
	out := make([]message.Held, 0, len(hs))
	for _, h := range hs {
		out = append(out, message.Held{Message: p.toMessage(h.Inbound), Reason: h.Cause.String(), Since: h.Since, Expires: h.Expires})
	}
	return out
}

// ErrNotHeld means no held message has that id.
var ErrNotHeld = errors.New("no held message with that id")

// ErrQueueFull means a release found the delivery queue full; the message
// stays held.
var ErrQueueFull = errors.New("the delivery queue is full: the message stays held, try again")

// Decide releases or denies a held message.
func (p *Peer) Decide(_ context.Context, id string, release bool, _ string) error {
	switch p.gate.Decide(id, release) {
	case DecideDone:
		return nil
	case DecideFailed:
		return ErrQueueFull
	}
	return ErrNotHeld
}

// Claims reports whether an address is one of Qwen's inbox sockets: this
// leg dials raw qwen-socks paths; others go to the Claude leg.
func (p *Peer) Claims(a addressing.Address) bool {
	return a.Kind == addressing.KindUDS && strings.Contains(filepath.Dir(a.Path), "qwen-socks")
}
