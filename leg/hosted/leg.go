package hosted

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// AddressPrefix starts every hosted session's address: hosted:NAME, which
// parses as a name.
const AddressPrefix = "hosted:"

// Defaults of Config.
const (
	DefaultMaxHosted = 8
	DefaultMaxQueued = 16
	MaxTurnText      = 1 << 20
	controlTimeout   = 10 * time.Second
	maxOpenPrompts   = 32 // per session: a CLI asks one at a time, a few at most
)

// Config configures the leg.
type Config struct {
	// StateDir holds hosted.json; "" keeps nothing (a test's leg).
	StateDir string
	// ClaudePath and QwenPath are the CLIs; "" looks them up on PATH.
	ClaudePath, QwenPath string
	// MaxHosted caps the sessions at once; MaxQueued the turns waiting for
	// one session (past it a send fails: the newest is refused).
	MaxHosted, MaxQueued int
	// Environ is where the CLI's environment is picked from; nil is
	// os.Environ.
	Environ func() []string
	Clock   clock.Clock
	Logger  *slog.Logger
}

// Leg runs hosted sessions.
type Leg struct {
	cfg     Config
	log     *slog.Logger
	clk     clock.Clock
	emitter *leg.Emitter

	mu       sync.Mutex
	store    *store
	sessions map[string]*session // by name
	runCtx   context.Context     // Run's, once it runs
	wg       sync.WaitGroup      // every pump

	junk, refused atomic.Uint64
}

var (
	_ leg.Leg          = (*Leg)(nil)
	_ leg.Starter      = (*Leg)(nil)
	_ leg.Prompter     = (*Leg)(nil)
	_ leg.Controllable = (*Leg)(nil)
	_ leg.Recaller     = (*Leg)(nil)
	_ leg.Resumer      = (*Leg)(nil)
)

// session is one hosted session; the leg's mu guards it.
type session struct {
	rec      *record
	p        *proc // nil while not running
	state    string
	detail   string // why it exited
	prompts  map[string]message.PermissionRequest
	taken    []turn // taken by the CLI, their answers (results) not yet seen, oldest first
	controls map[string]chan *wire.ControlResponse
	started  time.Time
}

// New returns the leg; its sessions start (or resume) when Run runs.
func New(cfg Config) (*Leg, error) {
	if cfg.MaxHosted <= 0 {
		cfg.MaxHosted = DefaultMaxHosted
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.Environ == nil {
		cfg.Environ = os.Environ
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := clock.Or(cfg.Clock)
	l := &Leg{cfg: cfg, log: cfg.Logger.With("leg", "hosted"), clk: c, emitter: leg.NewEmitter(message.ProtocolHosted, c.Now),
		sessions: map[string]*session{}, store: &store{}}
	if cfg.StateDir != "" {
		st, err := openStore(filepath.Join(cfg.StateDir, "hosted.json"))
		if err != nil {
			return nil, err
		}
		l.store = st
	}
	for _, r := range l.store.recs {
		l.sessions[r.Name] = newSession(r)
	}
	return l, nil
}

func newSession(r *record) *session {
	return &session{rec: r, state: "stopped", prompts: map[string]message.PermissionRequest{}, controls: map[string]chan *wire.ControlResponse{}}
}

// Name is the leg's protocol.
func (l *Leg) Name() message.Protocol { return message.ProtocolHosted }

// Sessions lists the hosted sessions, running or not.
func (l *Leg) Sessions(context.Context) ([]message.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]message.Session, 0, len(l.sessions))
	for _, r := range l.store.recs {
		out = append(out, l.sessions[r.Name].listing())
	}
	return out, nil
}

func (s *session) listing() message.Session {
	ms := message.Session{Address: AddressPrefix + s.rec.Name, Protocol: message.ProtocolHosted, Name: s.rec.Name,
		Ref: addressing.Ref(s.rec.SessionID), SessionID: s.rec.SessionID, Kind: s.rec.Agent, Status: s.state, Cwd: s.rec.Cwd,
		Reachable: true, StartedAt: s.started}
	if s.p != nil {
		ms.PID = s.p.cmd.Process.Pid
	}
	return ms
}

// Run starts (resumes) every kept session and, when ctx ends, stops them
// all: the records stay, so the next Run resumes them.
func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	l.emitter.Attach(in)
	l.mu.Lock()
	l.runCtx = ctx
	for _, r := range l.store.recs {
		if err := l.launchLocked(l.sessions[r.Name]); err != nil {
			l.log.Warn("hosted session not resumed", "name", r.Name, "err", err)
		}
	}
	l.mu.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	var procs []*proc
	for _, s := range l.sessions {
		if s.p != nil {
			procs = append(procs, s.p)
		}
	}
	l.mu.Unlock()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*stopGrace)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.stop(stopCtx) })
	}
	wg.Wait()
	l.wg.Wait()
	l.emitter.Close()
	return nil
}

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Start runs a new hosted session as spec asks.
func (l *Leg) Start(ctx context.Context, spec message.StartSpec) (message.Session, error) {
	a, ok := agents[spec.Agent]
	if !ok {
		return message.Session{}, fmt.Errorf("%w: agent %q is not one of %s", message.ErrBadStart, spec.Agent, strings.Join(message.Agents, ", "))
	}
	if _, err := findCLI(a, l.cliPath(a.name)); err != nil {
		return message.Session{}, err
	}
	cwd, err := leg.CheckWorkDir(spec.Cwd)
	if err != nil {
		return message.Session{}, err
	}
	if spec.PermissionMode != "" && !slices.Contains(message.PermissionModes, spec.PermissionMode) {
		return message.Session{}, fmt.Errorf("%w: permission mode %q is not one of %s", message.ErrBadStart, spec.PermissionMode, strings.Join(message.PermissionModes, ", "))
	}
	if len(spec.Prompt) > MaxTurnText {
		return message.Session{}, fmt.Errorf("%w: the prompt is over %d bytes", message.ErrBadStart, MaxTurnText)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runCtx == nil {
		return message.Session{}, fmt.Errorf("%w: the gateway is not running its hosted leg yet", message.ErrBadStart)
	}
	if len(l.store.recs) >= l.cfg.MaxHosted {
		return message.Session{}, fmt.Errorf("%w (%d)", message.ErrTooManyHosted, l.cfg.MaxHosted)
	}
	name := spec.Name
	if name == "" {
		name = spec.Agent + "-" + uuid.NewString()[:6]
	}
	if !validName.MatchString(name) {
		return message.Session{}, fmt.Errorf("%w: name %q: lowercase letters, digits, '.', '_' and '-', at most 63", message.ErrBadStart, name)
	}
	if _, taken := l.sessions[name]; taken {
		return message.Session{}, fmt.Errorf("%w: a hosted session is already named %q", message.ErrBadStart, name)
	}
	r := &record{Name: name, Agent: spec.Agent, Cwd: cwd, Mode: spec.PermissionMode, Model: spec.Model, Created: l.clk.Now().UTC()}
	if spec.Prompt != "" {
		r.Turns = []turn{{UUID: uuid.NewString(), MsgID: "start-" + name, Text: spec.Prompt}}
	}
	l.store.recs = append(l.store.recs, r)
	s := newSession(r)
	l.sessions[name] = s
	if err := l.store.save(); err != nil {
		l.store.remove(r)
		delete(l.sessions, name)
		return message.Session{}, err
	}
	if err := l.launchLocked(s); err != nil {
		l.store.remove(r)
		delete(l.sessions, name)
		_ = l.store.save()
		return message.Session{}, err
	}
	l.log.Info("hosted session started", "name", name, "agent", spec.Agent, "cwd", cwd)
	return s.listing(), nil
}

func (l *Leg) cliPath(agent string) string {
	if agent == message.AgentQwen {
		return l.cfg.QwenPath
	}
	return l.cfg.ClaudePath
}

// launchLocked starts s's CLI (resuming it when the CLI knows it) and
// writes its queued turns.
func (l *Leg) launchLocked(s *session) error {
	a := agents[s.rec.Agent]
	program, err := findCLI(a, l.cliPath(a.name))
	if err != nil {
		s.state, s.detail = "exited", err.Error()
		return err
	}
	if s.rec.SessionID == "" {
		// The CLI takes the id it is to use (--session-id): known from the
		// start, so a restart before its first event still finds it.
		s.rec.SessionID = uuid.NewString()
		if err := l.store.save(); err != nil {
			return err
		}
	}
	if n := reapStale(s.rec.PGID, s.rec.SessionID); n > 0 {
		l.log.Warn("hosted session's CLI left running by an earlier gateway killed", "name", s.rec.Name, "processes", n)
	}
	args := a.args(*s.rec)
	p, err := startProc(program, args, s.rec.Cwd, childEnv(l.cfg.Environ()))
	if err != nil {
		s.state, s.detail = "exited", err.Error()
		return err
	}
	s.rec.PGID = p.cmd.Process.Pid
	if err := l.store.save(); err != nil {
		l.log.Warn("hosted.json not written", "err", err)
	}
	s.p, s.state, s.detail, s.started = p, "starting", "", l.clk.Now().UTC()
	l.noteLocked(s)
	l.wg.Add(1)
	go l.pump(s, p)
	if a.initialize {
		// The longest wait Qwen Code allows for a prompt's answer (10 min).
		line, _ := wire.ControlEvent(uuid.NewString(), "gw-initialize", map[string]any{"subtype": "initialize", "timeout": map[string]any{"canUseTool": 600000}})
		if err := p.enqueue(line); err != nil {
			l.log.Warn("hosted session's initialize not written", "name", s.rec.Name, "err", err)
		}
	}
	for _, t := range s.rec.Turns {
		if err := l.writeTurn(s, p, t); err != nil {
			l.log.Warn("hosted session's queued turn not written", "name", s.rec.Name, "err", err)
			break
		}
	}
	return nil
}

func (l *Leg) writeTurn(s *session, p *proc, t turn) error {
	text := t.Text
	if t.From != nil {
		text = fmt.Sprintf("Message from %s (another coding-agent session, through the gateway). "+
			"Your final answer to it is sent back to %s.\n\n%s", t.From.Name, t.From.Name, t.Text)
	}
	line, err := wire.UserEvent(t.UUID, s.rec.SessionID, text)
	if err != nil {
		return err
	}
	return p.enqueue(line)
}

// Stop ends a hosted session for good: its CLI is stopped and its record
// dropped, so it is not resumed.
func (l *Leg) Stop(ctx context.Context, target message.Session) error {
	l.mu.Lock()
	s, err := l.lookupLocked(target.Address, target.Name)
	if err != nil {
		l.mu.Unlock()
		return err
	}
	p := s.p
	delete(l.sessions, s.rec.Name)
	l.store.remove(s.rec)
	err = l.store.save()
	s.state = "stopped"
	l.noteLocked(s)
	l.mu.Unlock()
	if p != nil {
		p.stop(ctx)
	}
	l.log.Info("hosted session stopped", "name", s.rec.Name)
	return err
}

func (l *Leg) lookupLocked(address, name string) (*session, error) {
	n := strings.TrimPrefix(address, AddressPrefix)
	if a, err := addressing.Parse(address); err == nil && a.Kind == addressing.KindName {
		n = strings.TrimPrefix(a.Name, AddressPrefix)
	}
	if s, ok := l.sessions[n]; ok {
		return s, nil
	}
	if s, ok := l.sessions[name]; ok {
		return s, nil
	}
	return nil, &addressing.NotFoundError{Kind: addressing.KindName, Query: address}
}

// Send makes m the session's next user turn. It is kept (hosted.json)
// until the CLI takes it, so a restart loses it not; past MaxQueued
// waiting turns it is refused.
func (l *Leg) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	now := l.clk.Now()
	fail := func(detail string) (message.Receipt, error) {
		l.refused.Add(1)
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: detail, Time: now}, nil
	}
	if len(m.Body) > MaxTurnText {
		return fail(fmt.Sprintf("too large: a turn is at most %d bytes", MaxTurnText))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, err := l.lookupLocked(m.To, m.ToName)
	if err != nil {
		return message.Receipt{}, err
	}
	if len(s.rec.Turns) >= l.cfg.MaxQueued {
		return fail(fmt.Sprintf("queue full: %d turns already wait for %s to take them", l.cfg.MaxQueued, s.rec.Name))
	}
	t := turn{UUID: uuid.NewString(), MsgID: m.ID, Text: m.Body}
	if m.From != "" && m.FromName != "" {
		t.From = &sender{Address: m.From, Name: m.FromName, SessionID: m.FromSession, HopChain: m.HopChain, Mode: m.Mode}
	}
	s.rec.Turns = append(s.rec.Turns, t)
	if err := l.store.save(); err != nil {
		s.rec.Turns = s.rec.Turns[:len(s.rec.Turns)-1]
		return message.Receipt{}, err
	}
	if s.p == nil {
		if l.runCtx == nil || l.runCtx.Err() != nil {
			return message.Receipt{MsgID: m.ID, Status: message.StatusQueued, Detail: "kept for the session's next start", Time: now}, nil
		}
		// A session whose CLI ended starts again for its next turn (its
		// queued turns, this one included, are written at start).
		if err := l.launchLocked(s); err != nil {
			return message.Receipt{MsgID: m.ID, Status: message.StatusQueued, Detail: "kept: the CLI does not start: " + err.Error(), Time: now}, nil
		}
		return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Time: now}, nil
	}
	if err := l.writeTurn(s, s.p, t); err != nil {
		return message.Receipt{MsgID: m.ID, Status: message.StatusQueued, Detail: "kept for the CLI's next start: " + err.Error(), Time: now}, nil
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Time: now}, nil
}

// noteLocked tells watchers a session changed state (started, exited,
// stopped): a session event, offered, never waited for.
func (l *Leg) noteLocked(s *session) {
	ls := s.listing()
	l.emitter.Offer(message.Event{Type: message.EventSession, Leg: message.ProtocolHosted, Time: l.clk.Now(), Session: &ls})
}

// Stats are the leg's counters.
type Stats struct {
	Junk    uint64 // CLI output lines that did not decode
	Refused uint64 // turns refused: too large, queue full
}

// Stats reports the counters.
func (l *Leg) Stats() Stats { return Stats{Junk: l.junk.Load(), Refused: l.refused.Load()} }

// Recall finds a turn the leg keeps and its CLI has not taken yet.
func (l *Leg) Recall(id string) (message.Message, message.Receipt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.store.recs {
		for _, t := range r.Turns {
			if t.MsgID == id {
				return t.message(r.Name), message.Receipt{MsgID: id, Status: message.StatusQueued, Detail: "kept until the session's CLI takes it", Time: l.clk.Now()}, true
			}
		}
	}
	return message.Message{}, message.Receipt{}, false
}

// Resumed are the turns accepted before a restart and not yet taken: the
// router tracks them again, so their delivered receipts reach watchers.
func (l *Leg) Resumed() []message.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []message.Message
	for _, r := range l.store.recs {
		for _, t := range r.Turns {
			if !isStartTurn(t.MsgID) {
				out = append(out, t.message(r.Name))
			}
		}
	}
	return out
}

func (t turn) message(name string) message.Message {
	return message.Message{ID: t.MsgID, To: AddressPrefix + name, ToName: name, Body: t.Text, Protocol: message.ProtocolHosted}
}
