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
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// Config sets up a Leg. Zero values take the defaults noted.
type Config struct {
	Name       string       // registered name; default "gateway"
	Home       string       // Qwen's home ($QWEN_HOME or ~/.qwen); required
	RuntimeDir string       // $XDG_RUNTIME_DIR
	TmpDir     string       // Node's temp dir (NodeTmpDir); default /tmp
	Cwd        string       // default the working directory
	Mode       message.Mode // our review class for mode parity; default prompting
	Inbound    Policy       // PolicyUnset: parity
	HeldExpiry time.Duration
	Limits     Limits // the inbox's admission limits; zero fields are Qwen Code's
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

// Leg is the Qwen Code leg: the gateway registered as a Qwen Code session
// of kind external.
type Leg struct {
	cfg        Config
	log        *slog.Logger
	clk        clock.Clock
	pid        int
	sessionID  string
	socketPath string
	recPath    string
	sessions   string
	registry   *uds.RegistryDir // sessions, re-checked before each read
	token      Token
	childToken Token
	auth       Authenticator
	guard      *Guard
	ledger     *Ledger
	mirror     *Mirror
	drops      *DropReceipts
	ln         *uds.Listener
	facts      ProcessFacts
	// recordFiles are the registry's records as last parsed, read again
	// when a file changes (a /clear rewrites its record with a new id).
	recordFiles *uds.FileCache[Record]
	index       atomic.Pointer[recordIndex] // which file named which inbox, for the listing it was made from
	overCap     atomic.Bool                 // the last pass left record files unread (roster.go)
	al          *aliases

	sendSem chan struct{} // bounds receipt dials, as Qwen bounds concurrent sends

	emitter *leg.Emitter
	wg      sync.WaitGroup // receipt dials in flight

	// testHookAliasWritten, when set, runs as soon as an alias record is
	// on disk: what a sender that reads it at once meets.
	testHookAliasWritten func(path string)
}

// Register binds the inbox and writes the record. Run serves it and
// removes the record when its context ends.
func Register(cfg Config) (*Leg, error) {
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
	// docs/protocols/qwen-cross-session.md#connections-and-lines: the 1 MiB
	// cap counts UTF-16 code units, and only a line
	// that is accepted (the auth line, a frame that parses) extends the
	// 30 s deadline.
	cfg.Socket.Units, cfg.Socket.Rearm = uds.UnitUTF16, uds.RearmOnMark
	p := &Leg{
		cfg: cfg, log: cfg.Logger.With("leg", "qwen"), clk: cfg.Clock, pid: os.Getpid(),
		sessionID: uuid.NewString(), sessions: SessionsDir(cfg.Home), facts: HostFacts{},
		recordFiles: uds.NewFileCache(MaxRecordBytes, ParseRecord),
		sendSem:     make(chan struct{}, maxReceiptDials), al: newAliases(),
		emitter: leg.NewEmitter(message.ProtocolQwen, cfg.Clock.Now),
	}
	p.token, p.childToken = NewIPCToken(), NewChildToken()
	p.auth = Authenticator{IPCToken: p.token, ChildToken: p.childToken, Controllers: cfg.Controllers}
	p.ledger = NewLedger(cfg.Clock)
	p.mirror = NewMirror(cfg.Clock, Limits{})
	p.drops = NewDropReceipts(cfg.Clock, p.sendDropReceipt)
	p.guard = NewGuard(GuardConfig{
		Clock: cfg.Clock, Limits: cfg.Limits,
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
	p.registry = &uds.RegistryDir{Path: p.sessions, Log: p.log}
	if err := safefile.EnsureSharedDir(p.sessions); err != nil {
		return nil, fmt.Errorf("qwen sessions directory: %w: %w", uds.ErrUnsafeRegistry, err)
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
func (p *Leg) bind() error {
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

// Name is the leg's protocol.
func (p *Leg) Name() message.Protocol { return message.ProtocolQwen }

// SocketPath is our inbox; SessionID our session; RecordPath our record.
func (p *Leg) SocketPath() string { return p.socketPath }
func (p *Leg) SessionID() string  { return p.sessionID }
func (p *Leg) RecordPath() string { return p.recPath }

// ChildEnv is the environment a process the gateway starts gets, so its
// messages count as our own process's.
func (p *Leg) ChildEnv() []string { return ChildEnv(p.socketPath, p.childToken) }

// Ready reports whether the inbox is served and the record in place.
func (p *Leg) Ready() error {
	if !p.emitter.Attached() {
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
func (p *Leg) Run(ctx context.Context, out chan<- message.Event) error {
	p.emitter.Attach(out)
	deliveries := make(chan struct{})
	go func() {
		defer close(deliveries)
		for in := range p.guard.Deliveries() {
			m := p.toMessage(in)
			if !p.emitter.Emit(ctx, message.Event{Type: message.EventMessage, Message: &m}) {
				// Stopped before the router took it: the sender, told
				// "delivered" when it was queued, must hear it was not.
				p.report(Report{Inbound: in, Status: StatusExpired})
			}
		}
	}()
	err := p.ln.Serve(ctx, p.serveConn)
	p.guard.Shutdown()
	<-deliveries
	flushed := make(chan struct{})
	go func() { p.drops.Flush(); close(flushed) }()
	select {
	case <-flushed:
	case <-time.After(time.Second):
	}
	p.drops.Close()
	p.emitter.Close()
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

// emit hands an event to the router (see leg.Emitter).
func (p *Leg) emit(ctx context.Context, ev message.Event) { p.emitter.Emit(ctx, ev) }

// notice hands a drop or hold notice to the router without waiting
// (leg.Emitter.Notice): a router slow to read never stalls a sender's
// connection; a lost notice is counted and logged (the sender's receipt
// does not depend on it).
func (p *Leg) notice(ev message.Event) { p.emitter.Notice(p.log, ev) }

// NoticesLost is how many drop and hold notices the router did not take.
func (p *Leg) NoticesLost() uint64 { return p.emitter.Lost() }

// Claims reports whether an address is one of Qwen's inbox sockets: this
// leg dials raw qwen-socks paths; others go to the Claude leg.
func (p *Leg) Claims(a addressing.Address) bool {
	return a.Kind == addressing.KindUDS && strings.Contains(filepath.Dir(a.Path), "qwen-socks")
}
