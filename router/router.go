package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
)

// Config tunes a Router. Zero values take the defaults.
type Config struct {
	Logger       *slog.Logger
	Metrics      *observability.Metrics
	Tracer       trace.Tracer // one span per routed message; nil traces nothing
	DID          addressing.DIDResolver
	KeepEvents   int           // events kept for replay; default 1024
	WatcherBuf   int           // per-watcher queue; default 256
	KeepOutbound int           // outbound messages remembered; default 4096
	EventQueue   int           // legs' shared inbound queue; default 256
	RosterTTL    time.Duration // how long Resolve reuses a listing; default 2 s
	// ListTimeout bounds one leg's part of Sessions; a leg slower than
	// that is shown from its last listing, marked stale, so one slow leg
	// (a cloud that does not answer) never holds up the others. Default
	// DefaultListTimeout.
	ListTimeout time.Duration
	Clock       clock.Clock // nil for the wall clock
	DefaultMode message.Mode
	// Bridge publishes each leg's sessions on the other legs and forwards
	// what arrives at those aliases.
	Bridge bool
	// BridgeInterval is how often aliases are re-published; default 2 s.
	BridgeInterval time.Duration
	// BridgeOnly, when not empty, limits the bridge to sessions whose name
	// matches one of these path.Match patterns.
	BridgeOnly []string
}

// Router resolves, sends, tracks and fans out.
type Router struct {
	cfg  Config
	log  *slog.Logger
	legs []Leg
	hub  *Hub

	mu    sync.Mutex
	out   map[string]*outbound
	order []string // outbound ids, oldest first

	roster   []message.Session // the last listing, for Resolve
	rosterAt time.Time
	lastList map[message.Protocol][]message.Session // each leg's last good listing

	bg     sync.WaitGroup // bridge forwards and relays in flight
	bgSlot chan struct{}  // bounds them

	perms permBroker // permission prompts of the legs' sessions
}

type outbound struct {
	msg     message.Message
	track   *message.Tracker
	changed chan struct{} // closed and replaced on every move
	settle  interface{ Stop() bool }
	fwd     *forward   // set when the bridge forwarded this message
	span    trace.Span // open from dispatch until a final status (telemetry.go)
}

// Outbound is a snapshot of one sent message and where it stands.
type Outbound struct {
	Message  message.Message   `json:"message"`
	Status   message.Status    `json:"status"`
	Receipts []message.Receipt `json:"receipts"`
}

// New builds a router over legs.
func New(cfg Config, legs ...Leg) *Router {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.KeepEvents == 0 {
		cfg.KeepEvents = 1024
	}
	if cfg.WatcherBuf == 0 {
		cfg.WatcherBuf = 256
	}
	if cfg.KeepOutbound == 0 {
		cfg.KeepOutbound = 4096
	}
	if cfg.EventQueue == 0 {
		cfg.EventQueue = 256
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.BridgeInterval == 0 {
		cfg.BridgeInterval = 2 * time.Second
	}
	if cfg.RosterTTL == 0 {
		cfg.RosterTTL = 2 * time.Second
	}
	if cfg.ListTimeout <= 0 {
		cfg.ListTimeout = DefaultListTimeout
	}
	if cfg.DefaultMode == message.ModeUnknown {
		cfg.DefaultMode = message.ModePrompting
	}
	h := NewHub(cfg.KeepEvents, cfg.WatcherBuf)
	h.now = cfg.Clock.Now
	return &Router{cfg: cfg, log: cfg.Logger, legs: legs, hub: h, out: map[string]*outbound{}, lastList: map[message.Protocol][]message.Session{}, bgSlot: make(chan struct{}, 32)}
}

// Hub is the event fan-out.
func (r *Router) Hub() *Hub { return r.hub }

// Run runs every leg and the event pump until ctx ends or a leg fails.
func (r *Router) Run(ctx context.Context) error {
	for _, l := range r.legs {
		if rs, ok := l.(Resumer); ok {
			for _, m := range rs.Resumed() {
				r.remember(&outbound{msg: m, track: message.NewTracker(), changed: make(chan struct{})})
			}
		}
	}
	in := make(chan message.Event, r.cfg.EventQueue)
	g, ctx := errgroup.WithContext(ctx)
	for _, l := range r.legs {
		g.Go(func() error {
			if err := l.Run(ctx, in); err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("%s leg: %w", l.Name(), err)
			}
			return nil
		})
	}
	g.Go(func() error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case ev := <-in:
				r.handle(ctx, ev)
			}
		}
	})
	if r.cfg.Bridge {
		g.Go(func() error { r.bridgeSync(ctx, r.cfg.BridgeInterval); return nil })
	}
	err := g.Wait()
	r.bg.Wait()
	r.mu.Lock()
	for _, o := range r.out {
		if o.settle != nil {
			o.settle.Stop()
		}
		o.endSpan(statusStopped)
	}
	r.mu.Unlock()
	return err
}

func (r *Router) handle(ctx context.Context, ev message.Event) {
	switch ev.Type {
	case message.EventReceipt:
		if ev.Receipt == nil {
			return
		}
		r.cfg.Metrics.Receipt(ctx, string(ev.Leg), "in", ev.Receipt.Status.String())
		if !r.apply(*ev.Receipt) {
			r.log.Debug("receipt ignored", "msg_id", ev.Receipt.MsgID, "status", ev.Receipt.Status.String())
			return
		}
	case message.EventMessage:
		r.cfg.Metrics.Message(ctx, string(ev.Leg), "in")
		if ev.Message != nil && ev.Message.AliasOf != "" {
			if src, ok := r.Leg(ev.Leg); ok && r.cfg.Bridge {
				m := *ev.Message
				r.background(func() { r.bridge(ctx, src, m) }, func() {
					if h, ok := src.(AliasHost); ok {
						h.Relay(ctx, m, message.Receipt{MsgID: m.ID, Status: message.StatusDropped, DropReason: message.DropQueueFull, Reason: "the gateway's bridge is busy"})
					}
				})
			}
		}
	case message.EventLink:
		r.noteLink(ctx, ev)
	case message.EventDrop:
		if ev.Drop != nil {
			r.cfg.Metrics.Drop(ctx, string(ev.Leg), ev.Drop.Reason.String())
		}
	case message.EventPermission:
		var fresh bool
		if ev, fresh = r.notePermission(ev); !fresh {
			return
		}
	}
	r.hub.Publish(ev)
}

// background runs f in a bounded, owned goroutine; full runs busy instead.
func (r *Router) background(f, busy func()) {
	select {
	case r.bgSlot <- struct{}{}:
	default:
		busy()
		return
	}
	r.bg.Add(1)
	go func() {
		defer func() { <-r.bgSlot; r.bg.Done() }()
		f()
	}()
}

// apply moves an outbound message by rc; false when unknown or not allowed.
// A bridged message's move is relayed to its original sender.
func (r *Router) apply(rc message.Receipt) bool {
	r.mu.Lock()
	o, ok := r.out[rc.MsgID]
	if !ok {
		r.mu.Unlock()
		return false
	}
	if rc.Time.IsZero() {
		rc.Time = r.cfg.Clock.Now()
	}
	if !o.track.Apply(rc) {
		r.mu.Unlock()
		return false
	}
	o.endSpanIfFinal()
	if o.settle != nil && rc.Status != message.StatusSent {
		o.settle.Stop()
		o.settle = nil
	}
	close(o.changed)
	o.changed = make(chan struct{})
	fwd := o.fwd
	r.mu.Unlock()
	if fwd != nil && rc.Status != message.StatusSent {
		if h, ok := fwd.source.(AliasHost); ok {
			in := fwd.in
			r.background(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				h.Relay(ctx, in, rc)
			}, func() { r.log.Warn("receipt not relayed: bridge busy", "msg_id", in.ID) })
		}
	}
	return true
}

// DefaultListTimeout is Config.ListTimeout's default.
const DefaultListTimeout = 2 * time.Second

// Sessions lists every reachable session on every leg, sorted by protocol
// then name. The legs are listed at once, each within ListTimeout; a leg
// that fails to list is logged and left out, one that times out is shown
// from its last listing, marked stale.
func (r *Router) Sessions(ctx context.Context) []message.Session {
	lists := make([][]message.Session, len(r.legs))
	var wg sync.WaitGroup
	for i, l := range r.legs {
		wg.Go(func() { lists[i] = r.listLeg(ctx, l) })
	}
	wg.Wait()
	var all []message.Session
	for _, ss := range lists {
		all = append(all, ss...)
	}
	defer func() {
		r.mu.Lock()
		r.roster, r.rosterAt = all, r.cfg.Clock.Now()
		r.mu.Unlock()
	}()
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Protocol != all[j].Protocol {
			return all[i].Protocol < all[j].Protocol
		}
		if all[i].Name != all[j].Name {
			return all[i].Name < all[j].Name
		}
		return all[i].Address < all[j].Address
	})
	return all
}

// listLeg is one leg's part of Sessions: its sessions, and the aliases of
// remote sessions it publishes (alias_of says what they stand for; those
// of local sessions stay hidden).
func (r *Router) listLeg(ctx context.Context, l Leg) []message.Session {
	lctx, cancel := context.WithTimeout(ctx, r.cfg.ListTimeout)
	defer cancel()
	ss, err := l.Sessions(lctx)
	if err != nil {
		if ctx.Err() == nil && lctx.Err() != nil {
			r.mu.Lock()
			last := slices.Clone(r.lastList[l.Name()])
			r.mu.Unlock()
			r.log.Warn("listing sessions timed out; showing the last listing", "leg", l.Name(), "timeout", r.cfg.ListTimeout, "sessions", len(last))
			for i := range last {
				last[i].Stale = true
			}
			return last
		}
		r.log.Warn("listing sessions failed", "leg", l.Name(), "err", err)
		return nil
	}
	if al, ok := l.(AliasLister); ok {
		for _, a := range al.Aliases() {
			if strings.HasPrefix(a.AliasOf, "bridge:") {
				ss = append(ss, a)
			}
		}
	}
	r.mu.Lock()
	r.lastList[l.Name()] = ss
	r.mu.Unlock()
	return ss
}

// ErrNoLeg means no leg reaches an address that parsed fine.
var ErrNoLeg = errors.New("no leg reaches this address")

// Resolve finds the session and the leg for an address string. It resolves
// against the roster listed within RosterTTL when there is one, and lists
// afresh when that fails or finds the address outside the roster, so a
// session that just started or left is seen.
func (r *Router) Resolve(ctx context.Context, to string) (Leg, message.Session, error) {
	a, err := addressing.Parse(to)
	if err != nil {
		return nil, message.Session{}, err
	}
	if a.Kind == addressing.KindPipe {
		// A Windows pipe parses everywhere but is dialable only there.
		if err := a.Dialable(); err != nil {
			return nil, message.Session{}, fmt.Errorf("%s: %w", to, err)
		}
	}
	if cached, ok := r.cachedRoster(); ok {
		l, s, inRoster, err := r.resolveIn(ctx, a, cached)
		if err == nil && inRoster {
			return l, s, nil
		}
	}
	l, s, _, err := r.resolveIn(ctx, a, r.Sessions(ctx))
	return l, s, err
}

// ResolveFresh is Resolve against a listing made now, never a cached one:
// for a caller that knows a session may have just restarted under the
// same name.
func (r *Router) ResolveFresh(ctx context.Context, to string) (Leg, message.Session, error) {
	a, err := addressing.Parse(to)
	if err != nil {
		return nil, message.Session{}, err
	}
	l, s, _, err := r.resolveIn(ctx, a, r.Sessions(ctx))
	return l, s, err
}

func (r *Router) cachedRoster() ([]message.Session, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rosterAt.IsZero() || r.cfg.Clock.Now().Sub(r.rosterAt) > r.cfg.RosterTTL {
		return nil, false
	}
	return r.roster, true
}

func (r *Router) resolveIn(ctx context.Context, a addressing.Address, sessions []message.Session) (Leg, message.Session, bool, error) {
	// Candidates and sessions are kept side by side, not keyed by address:
	// several Qwen sessions of one process share one inbox address and are
	// told apart only by their session id.
	cands := make([]addressing.Candidate, 0, len(sessions))
	listed := make([]message.Session, 0, len(sessions))
	for _, s := range sessions {
		if s.AliasOf != "" {
			continue // an alias resolves to what it stands for, not to itself
		}
		ca, err := addressing.Parse(s.Address)
		if err != nil {
			continue
		}
		cands = append(cands, candidateOf(ca, s))
		listed = append(listed, s)
	}
	c, err := addressing.ResolveContext(ctx, a, cands, r.cfg.DID)
	if err != nil {
		return nil, message.Session{}, false, err
	}
	if i := slices.Index(cands, c); i >= 0 {
		if l, ok := r.Leg(listed[i].Protocol); ok {
			return l, listed[i], true, nil
		}
	}
	// Not in any roster: a leg may still claim the raw address.
	for _, l := range r.legs {
		if cl, ok := l.(Claimer); ok && cl.Claims(c.Address) {
			return l, message.Session{Address: c.Address.String(), Protocol: l.Name()}, false, nil
		}
	}
	if c.Address.Kind == addressing.KindBridge {
		return nil, message.Session{}, false, fmt.Errorf("%w: %s (remote sessions need `gateway serve` with remote credentials: --remote-token-file, --remote-session-key-file or --remote-claude-credentials)", ErrNoLeg, c.Address)
	}
	return nil, message.Session{}, false, fmt.Errorf("%w: %s", ErrNoLeg, c.Address)
}

func candidateOf(a addressing.Address, s message.Session) addressing.Candidate {
	return addressing.Candidate{Address: a, Name: s.Name, SessionID: s.SessionID, Protocol: string(s.Protocol), NativeRef: s.NativeRef}
}

// SendRequest is what a client asks to send.
type SendRequest struct {
	To       string
	Body     string
	Mode     message.Mode
	FromName string
	Files    []message.Attachment
	HopChain []string
	Unpaced  bool // see message.Message.Unpaced
	// ID is the message id to send under; empty for a fresh one. A send
	// with the id of a message the router still tracks sends nothing and
	// answers where that message stands (an idempotent retry).
	ID string
}

// Send resolves req.To, sends over the leg that reaches it and starts
// tracking. The returned snapshot is the state right after the write. When
// the leg's store took nothing, the error wraps ErrNotAccepted (and the
// snapshot shows the message failed).
func (r *Router) Send(ctx context.Context, req SendRequest) (Outbound, error) {
	if req.ID != "" {
		if snap, err := r.Message(req.ID); err == nil {
			return snap, nil
		}
	}
	leg, target, err := r.Resolve(ctx, req.To)
	if err != nil {
		return Outbound{}, err
	}
	mode := req.Mode
	if mode == message.ModeUnknown {
		mode = r.cfg.DefaultMode
	}
	id := req.ID
	if id == "" {
		id = uuid.NewString()
	}
	m := message.Message{
		ID: id, To: target.Address, ToName: target.Name, ToPID: target.PID, ToSessionID: target.SessionID, Body: req.Body,
		Mode: mode, FromName: req.FromName, HopChain: req.HopChain, Attachments: req.Files, Unpaced: req.Unpaced,
		Protocol: leg.Name(), Time: r.cfg.Clock.Now(),
	}
	var notAccepted error
	send := func(ctx context.Context, m message.Message) (message.Receipt, error) {
		rc, err := leg.Send(ctx, m)
		if errors.Is(err, ErrNotAccepted) {
			notAccepted = err
		}
		return rc, err
	}
	rc := r.dispatch(ctx, leg, m, nil, send, "out")
	snap, _ := r.Message(m.ID)
	r.hub.Publish(message.Event{Type: message.EventReceipt, Leg: leg.Name(), Receipt: &rc})
	if notAccepted != nil {
		return snap, fmt.Errorf("%s: %w", leg.Name(), notAccepted)
	}
	return snap, nil
}

// dispatch remembers m, writes it with send over leg, and applies the first
// receipt (failed when the write failed); a forward links it to the message
// it passes on. It is the one way a message leaves the router.
// dropper is an error from a leg's Send that stands for a drop: the
// receiver's published limits would have turned the message away.
type dropper interface {
	error
	DropReason() message.DropReason
}

func (r *Router) dispatch(ctx context.Context, leg Leg, m message.Message, fwd *forward,
	send func(context.Context, message.Message) (message.Receipt, error), dir string) message.Receipt {
	o := &outbound{msg: m, track: message.NewTracker(), changed: make(chan struct{}), fwd: fwd}
	r.remember(o)
	ctx, traced := r.traceRoute(ctx, leg, o, dir)
	rc, err := send(ctx, m)
	var dr dropper
	switch {
	case errors.As(err, &dr):
		// Refused before writing because the receiver would drop it: say
		// so in the receivers' own vocabulary.
		rc = message.Receipt{MsgID: m.ID, Status: message.StatusDropped, DropReason: dr.DropReason(), Reason: err.Error()}
	case err != nil:
		rc = message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: err.Error()}
	}
	rc.MsgID = m.ID
	traced(rc)
	r.cfg.Metrics.Message(ctx, string(leg.Name()), dir)
	r.apply(rc)
	r.settleLater(leg, o, rc)
	return rc
}

// settleLater infers delivery for a leg whose receivers send no receipt for
// a clean delivery, when none has come within its settle window.
func (r *Router) settleLater(leg Leg, o *outbound, rc message.Receipt) {
	st, ok := leg.(Settler)
	if !ok || rc.Status != message.StatusSent {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o.track.Status == message.StatusSent {
		id := o.msg.ID
		o.settle = r.cfg.Clock.AfterFunc(st.Settle(), func() {
			r.apply(message.Receipt{MsgID: id, Status: message.StatusDelivered,
				Detail: "inferred", Reason: "no receipt within the settle window; the receiver sends none for a clean delivery"})
		})
	}
}

func (r *Router) remember(o *outbound) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out[o.msg.ID] = o
	r.order = append(r.order, o.msg.ID)
	// Forget the oldest beyond the cap; a message still waiting on a receipt
	// is forgotten too, rather than growing without bound.
	for len(r.order) > r.cfg.KeepOutbound {
		old := r.order[0]
		r.order = r.order[1:]
		if oo := r.out[old]; oo != nil && oo.settle != nil {
			oo.settle.Stop()
		}
		r.out[old].endSpan(statusForgotten)
		delete(r.out, old)
	}
}

// ErrUnknownMessage is returned for an id the router does not remember.
var ErrUnknownMessage = errors.New("unknown message id")

// Message returns where an outbound message stands.
func (r *Router) Message(id string) (Outbound, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.out[id]
	if !ok {
		return Outbound{}, ErrUnknownMessage
	}
	return snapshot(o), nil
}

func snapshot(o *outbound) Outbound {
	return Outbound{Message: o.msg, Status: o.track.Status, Receipts: append([]message.Receipt(nil), o.track.Receipts...)}
}

// Wait blocks until the message reaches a final status or ctx ends, and
// returns the latest snapshot either way.
func (r *Router) Wait(ctx context.Context, id string) (Outbound, error) {
	for {
		r.mu.Lock()
		o, ok := r.out[id]
		if !ok {
			r.mu.Unlock()
			return Outbound{}, ErrUnknownMessage
		}
		snap, ch := snapshot(o), o.changed
		r.mu.Unlock()
		if snap.Status.Final() {
			return snap, nil
		}
		select {
		case <-ctx.Done():
			return snap, ctx.Err()
		case <-ch:
		}
	}
}

// Leg returns the leg named p.
func (r *Router) Leg(p message.Protocol) (Leg, bool) {
	for _, l := range r.legs {
		if l.Name() == p {
			return l, true
		}
	}
	return nil, false
}
