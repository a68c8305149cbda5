package router

import (
	"context"
	"errors"
	"fmt"
	"github.com/sessiongateway/gateway/internal/away"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/observability"
)

// Config tunes a Router. Zero values take the defaults.
type Config struct {
	// Away is the away switch (gateway away on): local sessions' prompts
	// wait for an answer from elsewhere while it is on. Nil keeps one in
	// memory.
	Away         *away.State
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
	// Host is this gateway's federation host name, "" without federation;
	// Sessions lists the sessions this gateway reaches itself with it, and
	// its own permission prompts carry it.
	Host string
}

// Router resolves, sends, tracks and fans out.
type Router struct {
	cfg  Config
	log  *slog.Logger
	legs []leg.Leg
	// abilities is what each leg declares, by name, read once: the
	// router learns what a leg can do from it, never from the name.
	abilities map[message.Protocol]leg.Abilities
	hub       *Hub

	mu    sync.Mutex
	out   map[string]*outbound
	order []string // outbound ids, oldest first
	// settling holds forwards forgotten (KeepOutbound) while their settle
	// window runs, so a receipt that comes within it (a hold) is still the
	// outcome relayed, not the delivery the window would infer. Bounded by
	// the forward rate times the window, and by 4*KeepOutbound.
	settling map[string]*outbound

	roster   []message.Session // the last listing, for Resolve
	rosterAt time.Time
	lastList map[message.Protocol][]message.Session // each leg's last good listing

	bg     sync.WaitGroup // bridge forwards and relays in flight
	bgSlot chan struct{}  // bounds them (MaxBackground)

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
func New(cfg Config, legs ...leg.Leg) *Router {
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
	if cfg.Away == nil {
		cfg.Away = &away.State{}
	}
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
	abilities := make(map[message.Protocol]leg.Abilities, len(legs))
	for _, l := range legs {
		if _, dup := abilities[l.Name()]; !dup { // the first of a name is the one Leg finds
			abilities[l.Name()] = leg.AbilitiesOf(l)
		}
	}
	return &Router{cfg: cfg, log: cfg.Logger, legs: legs, abilities: abilities, hub: h, out: map[string]*outbound{}, settling: map[string]*outbound{}, lastList: map[message.Protocol][]message.Session{}, bgSlot: make(chan struct{}, MaxBackground)}
}

// Hub is the event fan-out.
func (r *Router) Hub() *Hub { return r.hub }

// Run runs every leg and the event pump until ctx ends or a leg fails.
func (r *Router) Run(ctx context.Context) error {
	for _, l := range r.legs {
		if rs, ok := l.(leg.Resumer); ok {
			for _, m := range rs.Resumed() {
				r.remember(&outbound{msg: m, track: message.NewTracker(), changed: make(chan struct{})})
			}
		}
	}
	in := make(chan message.Event, r.cfg.EventQueue)
	g, ctx := errgroup.WithContext(ctx)
	var legs sync.WaitGroup
	for _, l := range r.legs {
		legs.Add(1)
		g.Go(func() error {
			defer legs.Done()
			if err := l.Run(ctx, in); err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("%s leg: %w", l.Name(), err)
			}
			return nil
		})
	}
	legsDone := make(chan struct{})
	go func() { legs.Wait(); close(legsDone) }()
	// The pump reads until every leg's Run has returned: a leg hands on
	// what it accepted while it stops.
	g.Go(func() error {
		for {
			select {
			case <-legsDone:
				r.dropLeft(ctx, in)
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
	for id, o := range r.settling {
		o.settle.Stop()
		delete(r.settling, id)
	}
	r.mu.Unlock()
	return err
}

// dropLeft counts and logs what is still queued once the legs stopped
// (an event a leg queued as its Run returned): nothing reads it now.
func (r *Router) dropLeft(ctx context.Context, in <-chan message.Event) {
	for len(in) > 0 {
		ev := <-in
		if ev.Type != message.EventMessage && ev.Type != message.EventReceipt {
			continue
		}
		d := message.Drop{Reason: message.DropShutdown}
		if ev.Message != nil {
			d.MsgID, d.From = ev.Message.ID, ev.Message.From
		}
		if ev.Receipt != nil {
			d.MsgID = ev.Receipt.MsgID
		}
		r.log.Warn("event dropped: the gateway stopped before handling it", "type", ev.Type, "msg_id", d.MsgID, "leg", ev.Leg)
		r.Dropped(ctx, ev.Leg, d)
	}
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
			// A leg may have its own sends take the bridge's road whether
			// or not the bridge is on (an MCP client's: that is how they go
			// out as from it).
			if src, ok := r.Leg(ev.Leg); ok && (r.cfg.Bridge || r.abilities[ev.Leg].BridgesOwnSends) {
				m := *ev.Message
				r.background(func() { r.bridge(ctx, src, m) }, func() {
					if h, ok := src.(leg.AliasHost); ok {
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

// Dropped counts and publishes a message a client of the router turned
// away (the approver refusing a forged reply), as a leg's drop is.
func (r *Router) Dropped(ctx context.Context, l message.Protocol, d message.Drop) {
	r.cfg.Metrics.Drop(ctx, string(l), d.Reason.String())
	r.hub.Publish(message.Event{Type: message.EventDrop, Leg: l, Drop: &d})
}

// MaxBackground bounds the bridge forwards and receipt relays in flight;
// past it a bridged message is dropped (queue-full) and a relay skipped.
// Another host's senders all cross one bridge, each forward and relay
// waiting on a socket or a stream's acknowledgement: at 32, sixteen
// senders on another host already had messages dropped.
const MaxBackground = 256

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
		if o, ok = r.settling[rc.MsgID]; !ok {
			r.mu.Unlock()
			return false
		}
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
		delete(r.settling, rc.MsgID)
	}
	close(o.changed)
	o.changed = make(chan struct{})
	fwd := o.fwd
	r.mu.Unlock()
	if rc.Status != message.StatusSent {
		r.relay(fwd, rc)
	}
	return true
}

// relay passes rc, a move of a bridged message, back to its original
// sender's leg; nothing for a message the bridge did not forward.
func (r *Router) relay(fwd *forward, rc message.Receipt) {
	if fwd == nil {
		return
	}
	if h, ok := fwd.source.(leg.AliasHost); ok {
		in := fwd.in
		r.background(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			h.Relay(ctx, in, rc)
		}, func() { r.log.Warn("receipt not relayed: bridge busy", "msg_id", in.ID) })
	}
}
