package claudebg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// AddressPrefix starts every background agent's address: claude-bg:<job
// id>, which parses as a name.
const AddressPrefix = "claude-bg:"

// KindBackground is every agent's Session.Kind.
const KindBackground = "background"

// Defaults and bounds of Config.
const (
	DefaultPollEvery   = 2 * time.Second
	DefaultMaxFollowed = 32
	DefaultTail        = 50
	DefaultOutputEvery = 500 * time.Millisecond
	// MaxReplyText caps a message sent to an agent, well under the
	// daemon's 1 MiB request line even when JSON escapes every byte.
	MaxReplyText = 128 << 10
	maxName      = 64  // runes of a listed name
	maxTitle     = 200 // runes of a listed title
)

var shortPattern = regexp.MustCompile(`^[a-f0-9]{8}$`)

// Config configures the leg.
type Config struct {
	// ConfigDir is Claude Code's config dir; "" is ConfigDir(os.LookupEnv).
	ConfigDir string
	// PollEvery is how often Run lists the agents to follow new ones.
	PollEvery time.Duration
	// MaxFollowed caps the agents whose output is streamed at once; past
	// it an agent is listed but not followed (counted).
	MaxFollowed int
	// Tail is how many of an agent's last output writes its first
	// subscription replays.
	Tail int
	// OutputEvery is the least time between two output events of one
	// agent: its TUI repaints a spinner many times a second, and the
	// router's event history is shared. Output in between is gathered,
	// and shown with the next write after it, a state change or the end.
	OutputEvery time.Duration
	Clock       clock.Clock
	Logger      *slog.Logger
}

// Leg lists Claude Code's background agents, streams their output and
// sends them text, through their daemon's control socket.
type Leg struct {
	cfg     Config
	client  client
	keyPath string
	log     *slog.Logger
	clk     clock.Clock
	emitter *leg.Emitter
	poke    chan struct{}
	timer   clock.Stopper // Run's next poll

	mu       sync.Mutex
	pinged   os.FileInfo // the socket whose ping said Proto
	lastErr  string      // the last error logged, "" once the daemon answers
	followed map[string]bool
	seen     map[string]bool // agents followed before: resubscribed with no replay
	key      *keyCache
	wg       sync.WaitGroup // every follower

	dropped, unfollowed, errs atomic.Uint64
}

var _ leg.Leg = (*Leg)(nil)

// New returns the leg for the config dir.
func New(cfg Config) (*Leg, error) {
	if cfg.ConfigDir == "" {
		d, err := ConfigDir(os.LookupEnv)
		if err != nil {
			return nil, err
		}
		cfg.ConfigDir = d
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = DefaultPollEvery
	}
	if cfg.MaxFollowed <= 0 {
		cfg.MaxFollowed = DefaultMaxFollowed
	}
	if cfg.Tail <= 0 {
		cfg.Tail = DefaultTail
	}
	if cfg.OutputEvery <= 0 {
		cfg.OutputEvery = DefaultOutputEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	sock, err := SocketPath(cfg.ConfigDir)
	if err != nil {
		return nil, err
	}
	c := clock.Or(cfg.Clock)
	return &Leg{cfg: cfg, client: client{path: sock}, keyPath: keyPath(cfg.ConfigDir), log: cfg.Logger.With("leg", "claude-bg"),
		clk: c, emitter: leg.NewEmitter(message.ProtocolClaudeBG, c.Now), poke: make(chan struct{}, 1),
		followed: map[string]bool{}, seen: map[string]bool{}, key: &keyCache{}}, nil
}

// Name is the leg's protocol.
func (l *Leg) Name() message.Protocol { return message.ProtocolClaudeBG }

// SocketPath is the control socket the leg speaks to.
func (l *Leg) SocketPath() string { return l.client.path }

// record is a job as list and a snapshot show it: the fields the gateway
// reads (§5). Its state is a hint, never a decision (FINDINGS-bg §6).
type record struct {
	Short      string `json:"short"`
	SessionID  string `json:"sessionId"`
	PID        int    `json:"pid"`
	StartedAt  int64  `json:"startedAt"`
	Cwd        string `json:"cwd"`
	Tempo      string `json:"tempo"`
	State      string `json:"state"`
	Detail     string `json:"detail"`
	Intent     string `json:"intent"`
	Name       string `json:"name"`
	CLIVersion string `json:"cliVersion"`
	Needs      string `json:"needs"`
	Outcome    string `json:"outcome"`
	Dying      bool   `json:"dying"`
}

func (r record) live() bool { return r.Outcome == "" && !r.Dying }

// status is the job's state as one word: its outcome once settled, else
// its tempo (active, idle, blocked), else its state.
func (r record) status() string {
	switch {
	case r.Outcome != "":
		return clean(r.Outcome, 20)
	case r.Dying:
		return "stopping"
	case r.Tempo != "":
		return clean(r.Tempo, 20)
	}
	return clean(r.State, 20)
}

func (r record) session() message.Session {
	name := r.Name
	if name == "" {
		name = r.Intent
	}
	s := message.Session{Address: AddressPrefix + r.Short, Protocol: message.ProtocolClaudeBG, Name: clean(oneLine(name), maxName),
		Ref: r.Short[:6], NativeRef: r.Short, SessionID: clean(r.SessionID, 64), PID: r.PID, Kind: KindBackground,
		Status: r.status(), Cwd: clean(r.Cwd, 4096), Version: clean(r.CLIVersion, 40), Reachable: r.live(),
		Title: clean(oneLine(r.Intent), maxTitle)}
	if s.Name == "" {
		s.Name = AddressPrefix + r.Short
	}
	if r.StartedAt > 0 {
		s.StartedAt = time.UnixMilli(r.StartedAt).UTC()
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Sessions lists the daemon's agents, asking it now. No daemon is no
// sessions; a daemon of another protocol version is a *ProtoError.
func (l *Leg) Sessions(ctx context.Context) ([]message.Session, error) {
	recs, err := l.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]message.Session, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.session())
	}
	return out, nil
}

// list is the daemon's jobs; nil and no error when there is no daemon.
// Every outcome goes through note, so a failure is logged once.
func (l *Leg) list(ctx context.Context) ([]record, error) {
	a, err := l.do(ctx, map[string]any{"op": "list"})
	if errors.Is(err, ErrNoDaemon) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	recs := make([]record, 0, len(a.Jobs))
	for _, raw := range a.Jobs {
		var r record
		if json.Unmarshal(raw, &r) != nil || !shortPattern.MatchString(r.Short) {
			l.dropped.Add(1)
			continue
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// do is one request in version Proto, after the version check (§4), with
// its outcome noted.
func (l *Leg) do(ctx context.Context, req map[string]any) (*answer, error) {
	if err := l.checkVersion(ctx); err != nil {
		return nil, l.note(err)
	}
	req["proto"] = Proto
	a, err := l.client.do(ctx, req)
	if pe := (*ProtoError)(nil); errors.As(err, &pe) {
		l.forgetPing() // upgraded under us: ask again next time
	}
	return a, l.note(err)
}

// checkVersion pings a socket it has not pinged (a new daemon has a new
// socket) and goes on only if the daemon speaks Proto.
func (l *Leg) checkVersion(ctx context.Context) error {
	fi, err := os.Lstat(l.client.path)
	if err != nil {
		return ErrNoDaemon
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s is not a socket (%v): the gateway does not use it", l.client.path, fi.Mode().Type())
	}
	l.mu.Lock()
	known := l.pinged != nil && os.SameFile(l.pinged, fi) && l.pinged.ModTime().Equal(fi.ModTime())
	l.mu.Unlock()
	if known {
		return nil
	}
	a, err := l.client.do(ctx, map[string]any{"op": "ping"})
	if err != nil {
		return err
	}
	if string(a.Proto) != fmt.Sprint(Proto) {
		return &ProtoError{ServerProto: clean(string(a.Proto), 16), ServerVersion: clean(a.Version, 40)}
	}
	l.mu.Lock()
	l.pinged = fi
	l.mu.Unlock()
	return nil
}

func (l *Leg) forgetPing() {
	l.mu.Lock()
	l.pinged = nil
	l.mu.Unlock()
}

// note logs a failure to reach the daemon once, until it answers again;
// a refusal of one request (a *DaemonError) is the caller's to report,
// and no daemon is not worth a line. It returns err.
func (l *Leg) note(err error) error {
	var de *DaemonError
	if errors.As(err, &de) {
		return err
	}
	what := ""
	if err != nil && !errors.Is(err, ErrNoDaemon) {
		what = err.Error()
		l.errs.Add(1)
	}
	l.mu.Lock()
	last := l.lastErr
	l.lastErr = what
	l.mu.Unlock()
	switch {
	case what != "" && what != last:
		l.log.Warn("Claude Code's background agents are not reachable", "socket", l.client.path, "err", err)
	case err == nil && last != "":
		l.log.Info("Claude Code's background-agent daemon answers again", "socket", l.client.path)
	}
	return err
}

// shortOf is the job id an address names: claude-bg:<short>, or the same
// parsed as a name.
func shortOf(address string) (string, bool) {
	s, ok := strings.CutPrefix(address, AddressPrefix)
	if !ok {
		if a, err := addressing.Parse(address); err == nil && a.Kind == addressing.KindName {
			s, ok = strings.CutPrefix(a.Name, AddressPrefix)
		}
	}
	return s, ok && shortPattern.MatchString(s)
}

// Send types m's text into the agent as its next prompt (`reply`, with
// the control key). A refusal is a failed receipt saying why.
func (l *Leg) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	short, ok := shortOf(m.To)
	if !ok {
		return message.Receipt{}, &addressing.NotFoundError{Kind: addressing.KindName, Query: m.To}
	}
	now := l.clk.Now()
	fail := func(why string) (message.Receipt, error) {
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: why, Time: now}, nil
	}
	switch {
	case strings.TrimSpace(m.Body) == "":
		return fail("empty: a background agent takes text")
	case len(m.Body) > MaxReplyText:
		return fail(fmt.Sprintf("too large: a reply to a background agent is at most %d bytes", MaxReplyText))
	}
	_, err := l.keyed(ctx, map[string]any{"op": "reply", "short": short, "text": m.Body})
	if err != nil {
		return fail(reason(err))
	}
	l.emitter.Offer(message.Event{Type: message.EventReceipt, Receipt: &message.Receipt{MsgID: m.ID,
		Status: message.StatusDelivered, Detail: "typed into the background agent as its next prompt", Time: l.clk.Now()}})
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, Time: now}, nil
}

// reason is err as a receipt's reason.
func reason(err error) string {
	var de *DaemonError
	switch {
	case errors.Is(err, ErrNoKey):
		return err.Error()
	case errors.Is(err, ErrNoDaemon):
		return "no Claude Code background-agent daemon is running"
	case errors.As(err, &de) && de.Code == "ENOJOB":
		return "the background agent has ended"
	case errors.As(err, &de) && de.Busy():
		return "busy, try again: " + de.Error()
	}
	return err.Error()
}

// keyed sends req with the control key. An EAUTH answer reads the key
// again, since a restarted daemon writes a new one, and retries once.
func (l *Leg) keyed(ctx context.Context, req map[string]any) (*answer, error) {
	for try := 0; ; try++ {
		k, err := l.key.get(l.keyPath, try > 0)
		if err != nil {
			return nil, err
		}
		req["auth"] = k
		a, err := l.do(ctx, req)
		var de *DaemonError
		if try == 0 && errors.As(err, &de) && de.Code == "EAUTH" {
			continue
		}
		if errors.As(err, &de) && de.Code == "EAUTH" {
			return nil, fmt.Errorf("%w: the daemon refused the key in %s (%s)", ErrNoKey, l.keyPath, de.Text)
		}
		return a, err
	}
}

// Stop ends a background agent (`kill`; the daemon asks no key for it).
func (l *Leg) Stop(ctx context.Context, target message.Session) error {
	short, ok := shortOf(target.Address)
	if !ok {
		return &addressing.NotFoundError{Kind: addressing.KindName, Query: target.Address}
	}
	_, err := l.do(ctx, map[string]any{"op": "kill", "short": short})
	var de *DaemonError
	if errors.As(err, &de) && de.Code == "ENOJOB" {
		return &addressing.NotFoundError{Kind: addressing.KindName, Query: target.Address}
	}
	if err == nil {
		l.log.Info("background agent stopped", "agent", short)
	}
	return err
}

// Stats are the leg's counters.
type Stats struct {
	Dropped    uint64 // lines, records and frames from the daemon dropped: too long or not what they should be
	Unfollowed uint64 // times an agent was listed but not followed: MaxFollowed reached
	Errors     uint64 // failures to reach the daemon
}

// Stats reports the counters.
func (l *Leg) Stats() Stats {
	return Stats{Dropped: l.dropped.Load(), Unfollowed: l.unfollowed.Load(), Errors: l.errs.Load()}
}
