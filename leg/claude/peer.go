package claude

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
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
	Name        string       // registered name; default "gateway"
	ConfigDir   string       // $CLAUDE_CONFIG_DIR or ~/.claude
	RuntimeDir  string       // $XDG_RUNTIME_DIR; empty for /tmp/cc-socks
	TmpDir      string       // default /tmp
	Cwd         string       // default the working directory
	Version     string       // written into the registry entry
	Mode        message.Mode // our own review class; default prompting
	Inbound     Policy
	RequireAuth bool          // refuse unauthenticated senders
	Limits      Limits        // guard limits; default DefaultLimits()
	Settle      time.Duration // see Settle; default 2 s
	HoldTTL     time.Duration // held messages expire after; default 25 min
	Clock       clock.Clock
	Logger      *slog.Logger
	Socket      uds.Limits
	// SpoolDir is where outbound attachments are staged; default
	// <ConfigDir>/file-transfers.
	SpoolDir string
	// UploadsDir keeps inbound attachments, one file per distinct content;
	// empty leaves them in the spool, checked.
	UploadsDir string
	// UploadsQuota caps the bytes kept in UploadsDir; default
	// DefaultUploadsQuota.
	UploadsQuota int64
	// UploadsMaxAge is how long an upload no message names is kept;
	// default DefaultUploadsMaxAge.
	UploadsMaxAge time.Duration
	// Kind is written into the registry entry; default KindGateway.
	Kind string
	// Hooks is the hook endpoint, where Claude Code's hooks report
	// permission prompts (hooks.go); no Socket, no endpoint.
	Hooks HookOptions
	// ReceiptSent, when set, hears the status of each receipt written to a
	// sender (for the receipts counter); it must not block.
	ReceiptSent func(message.Status)
}

// Leg is the Claude Code leg: the gateway registered as a first-class
// Claude Code peer.
type Leg struct {
	cfg         Config
	log         *slog.Logger
	clock       clock.Clock
	pid         int
	uid         int
	sessionID   string
	startedAt   time.Time
	socketPath  string
	addr        string
	sessionsDir string
	registry    *uds.RegistryDir // sessionsDir, re-checked before each read
	regPath     string
	keyPath     string
	procStart   string
	pidDomain   string
	peerToken   string
	childToken  string
	hopToken    string
	guard       *Guard
	drops       *dropReporter
	replies     replyBook
	sent        outstanding             // where our messages went, to vet their receipts
	keyFiles    *uds.FileCache[KeyFile] // targets' key files, read again when they change
	entries     *uds.FileCache[Entry]   // targets' registry entries, likewise
	overCap     atomic.Bool             // the last listing left entries unread (MaxEntries)
	idleAsked   outstanding             // our idle subscriptions: id -> the socket asked
	// unsolicited idle notices: dropped since the last drop event, and when it went
	unsolicitedN  atomic.Int64
	unsolicitedAt atomic.Int64
	bridge        *bridgeHost
	ln            *uds.Listener
	hooks         *hooks // nil without a hook endpoint

	emitter *leg.Emitter
	uploads *uploads // nil without an uploads directory

	mu       sync.Mutex
	held     map[string]*heldMsg
	idleSubs map[string]idleSub // by subscriber msg_id
	closed   bool
}

// maxIdleSubs bounds remembered idle subscribers; the oldest is forgotten.
const maxIdleSubs = 256

func randHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Register binds the socket and writes the key file and registry entry. The
// leg is visible to other sessions from then on; Run serves it and removes
// everything when its context ends.
func Register(cfg Config) (*Leg, error) {
	if cfg.Name == "" {
		cfg.Name = "gateway"
	}
	if cfg.ConfigDir == "" {
		d, err := ConfigDir()
		if err != nil {
			return nil, err
		}
		cfg.ConfigDir = d
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
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits()
	}
	if cfg.Settle == 0 {
		cfg.Settle = 2 * time.Second
	}
	if cfg.HoldTTL == 0 {
		cfg.HoldTTL = 25 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Kind == "" {
		cfg.Kind = KindGateway
	}
	if cfg.Version == "" {
		cfg.Version = "dev" // the real CLI always writes a version
	}
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = filepath.Join(cfg.ConfigDir, "file-transfers")
	}
	if err := validName(cfg.Name); err != nil {
		return nil, err
	}
	p := &Leg{
		cfg: cfg, log: cfg.Logger.With("leg", "claude"), clock: cfg.Clock,
		pid: os.Getpid(), uid: os.Geteuid(), sessionID: uuid.NewString(),
		startedAt: cfg.Clock.Now(), sessionsDir: filepath.Join(cfg.ConfigDir, "sessions"),
		held: map[string]*heldMsg{}, idleSubs: map[string]idleSub{},
		emitter: leg.NewEmitter(message.ProtocolClaude, cfg.Clock.Now),
		replies: newReplyBook(), sent: newOutstanding(), idleAsked: newOutstanding(),
		keyFiles: uds.NewFileCache(maxKey, ParseKeyFile), entries: uds.NewFileCache(maxEntry, ParseEntry),
	}
	id, err := uds.Identify(p.pid)
	if err != nil {
		return nil, fmt.Errorf("reading our own process identity: %w", err)
	}
	p.procStart = strconv.FormatUint(id.StartTicks, 10)
	p.pidDomain = fmt.Sprintf("linux:%s:pid:[%d]", id.MachineID, id.PidNS)

	p.socketPath = SocketPath(cfg.RuntimeDir, cfg.TmpDir, p.pid, p.uid)
	p.addr = addressing.UDS(p.socketPath) // percent-encoded, as the real CLI prints it
	if p.peerToken, err = randHex(16); err != nil {
		return nil, err
	}
	if p.childToken, err = randHex(16); err != nil {
		return nil, err
	}
	key, err := NewHopKey()
	if err != nil {
		return nil, err
	}
	p.hopToken = HopToken(key, p.addr)
	p.guard = NewGuard(cfg.Limits, cfg.Clock, func() []string { return []string{p.hopToken} })
	p.drops = newDropReporter(cfg.Clock, p.addr, p.receipt)
	p.registry = &uds.RegistryDir{Path: p.sessionsDir, Log: p.log}

	if err := safefile.EnsureDir(filepath.Dir(p.socketPath)); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if err := safefile.EnsureSharedDir(p.sessionsDir); err != nil {
		return nil, fmt.Errorf("sessions directory: %w: %w", uds.ErrUnsafeRegistry, err)
	}
	// Only a line that parses (an auth line, a frame) extends the read
	// deadline, as on the Qwen leg: a blank line every few seconds must not
	// hold a connection slot.
	sock := cfg.Socket
	sock.Rearm = uds.RearmOnMark
	if p.ln, err = uds.Listen(p.socketPath, sock); err != nil {
		return nil, fmt.Errorf("binding %s: %w", p.socketPath, err)
	}
	if cfg.Hooks.Socket != "" {
		if p.hooks, err = listenHooks(cfg.Hooks, cfg.Clock); err != nil {
			p.ln.Close()
			return nil, err
		}
	}
	if err := p.writeFiles(); err != nil {
		p.ln.Close()
		if p.hooks != nil {
			p.hooks.ln.Close()
		}
		p.removeFiles()
		return nil, err
	}
	if n := gcSpool(cfg.SpoolDir, cfg.Clock.Now()); n > 0 {
		p.log.Info("removed stale staged attachments", "count", n, "spool", cfg.SpoolDir)
	}
	if cfg.UploadsDir != "" {
		p.uploads = newUploads(cfg.UploadsDir, cfg.UploadsQuota, cfg.UploadsMaxAge, cfg.Clock)
		if n, freed := p.uploads.collect(); n > 0 {
			p.log.Info("removed old uploads", "count", n, "bytes", freed, "dir", cfg.UploadsDir)
		}
	}
	p.log.Info("registered as a Claude Code peer", "name", cfg.Name, "socket", p.socketPath,
		"session_id", p.sessionID, "registry", p.regPath)
	return p, nil
}

func validName(n string) error {
	if n != SanitizeName(n) || n == "" {
		return fmt.Errorf("name %q: use 1-%d characters without quotes, angle brackets or control characters", n, MaxNameRunes)
	}
	return nil
}

// Name is the leg's protocol.
func (p *Leg) Name() message.Protocol { return message.ProtocolClaude }

// Address is our own uds: address.
func (p *Leg) Address() string { return p.addr }

// SessionID is our registered session id.
func (p *Leg) SessionID() string { return p.sessionID }

// SocketPath is where we listen.
func (p *Leg) SocketPath() string { return p.socketPath }

// RegistryPath is our registry entry.
func (p *Leg) RegistryPath() string { return p.regPath }

// KeyPath is our key file.
func (p *Leg) KeyPath() string { return p.keyPath }

// ChildToken is the token processes we start present to be treated as ours.
func (p *Leg) ChildToken() string { return p.childToken }

// HopToken is our per-boot hop token.
func (p *Leg) HopToken() string { return p.hopToken }

// Settle is how long a sent message waits for a held or dropped receipt
// before it counts as delivered: the real CLI sends none for a clean delivery.
func (p *Leg) Settle() time.Duration { return p.cfg.Settle }

// Ready reports whether the leg is registered and serving.
func (p *Leg) Ready() error {
	if !p.emitter.Attached() {
		return errors.New("not serving yet")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("shutting down")
	}
	if _, err := os.Lstat(p.regPath); err != nil {
		return fmt.Errorf("registry entry missing: %w", err)
	}
	return nil
}

// Run serves inbound connections and publishes what arrives to out until ctx
// ends; then it tells idle subscribers we exited and removes the registration.
func (p *Leg) Run(ctx context.Context, out chan<- message.Event) error {
	p.emitter.Attach(out)
	var gc sync.WaitGroup
	gcCtx, stopGC := context.WithCancel(ctx)
	if p.uploads != nil {
		gc.Go(func() { p.uploads.run(gcCtx, p.log) })
	}
	var hookErr error
	if p.hooks != nil {
		gc.Go(func() { hookErr = p.hooks.ln.Serve(gcCtx, p.serveHook) })
	}
	err := p.ln.Serve(ctx, p.serveConn)
	stopGC()
	gc.Wait()
	err = errors.Join(err, hookErr)
	p.shutdown()
	p.emitter.Close()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

func (p *Leg) shutdown() {
	p.drops.close()
	p.mu.Lock()
	p.closed = true
	subs := make([]idleSub, 0, len(p.idleSubs))
	for _, s := range p.idleSubs {
		subs = append(subs, s)
	}
	held := p.held
	p.held = map[string]*heldMsg{}
	for _, h := range held {
		if h.timer != nil {
			h.timer.Stop()
		}
	}
	p.mu.Unlock()
	// Like the real CLI on exit: pending holds expire, subscribers hear
	// exited. Bounded, so a stuck peer cannot hold up shutdown.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for id, h := range held {
		wg.Go(func() {
			p.receipt(ctx, h.reply, NewStatusReceipt(p.addr, id, WireExpired, "", "The session exited before the hold was decided"))
		})
	}
	for _, s := range subs {
		wg.Go(func() { p.sendIdleNotice(ctx, s, IdleStateExited) })
	}
	wg.Wait()
	p.removeFiles()
	p.log.Info("deregistered Claude Code peer", "socket", p.socketPath)
}

// emit hands an event to the router (see leg.Emitter).
func (p *Leg) emit(ctx context.Context, ev message.Event) { p.emitter.Emit(ctx, ev) }

// notice hands a drop or hold notice to the router without waiting
// (leg.Emitter.Notice): a router slow to read never stalls a sender's
// connection; a lost notice is counted and logged.
func (p *Leg) notice(ev message.Event) { p.emitter.Notice(p.log, ev) }

// NoticesLost is how many drop and hold notices the router did not take.
func (p *Leg) NoticesLost() uint64 { return p.emitter.Lost() }

// queued is how many inbound messages wait for the router to take them. It
// feeds the guard's queue-full check. Held messages do not count: the real
// CLI counts only its command queue (held ones are parked apart, in
// inbound.held): docs/protocols/claude-peer-socket.md#admission.
func (p *Leg) queued() int { return p.emitter.Pending() }
