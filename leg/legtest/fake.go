package legtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Fake is an in-memory leg: it lists the sessions it was given, answers
// every Send with a sent receipt (or SendErr, or what OnSend says),
// hands on the events a test Emits, and counts what it was sent and
// asked. Its hooks and fields are set before the router runs it; the
// sessions and what it recorded are read and changed through its methods
// at any time.
//
// On its own it declares only the abilities that do nothing unless a test
// sets them up (Claimer, Recaller, Resumer, Readier, AliasLister): a
// router sees a Fake with none of them set as a leg without them. The
// abilities that change how the router treats a leg are switched on with
// With.
type Fake struct {
	name message.Protocol

	// SendErr, when set, is what Send returns (after counting the send).
	SendErr error
	// OnSessions, when set, answers Sessions instead of the roster.
	OnSessions func(ctx context.Context) ([]message.Session, error)
	// OnSend, when set, answers Send (after counting it).
	OnSend func(ctx context.Context, m message.Message) (message.Receipt, error)
	// OnRun, when set, runs once Run has recorded its channel, in place of
	// waiting for ctx: a leg that hands on events as it stops, say.
	OnRun func(ctx context.Context, in chan<- message.Event) error
	// OnClaims answers Claims; nil claims nothing.
	OnClaims func(a addressing.Address) bool
	// OnRecall answers Recall; nil recalls nothing.
	OnRecall func(id string) (message.Message, message.Receipt, bool)
	// OnSendAs, when set, answers SendAs (after counting it); else a sent
	// receipt.
	OnSendAs func(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error)
	// OnDecide answers Decide of a held message; a nil error (or no hook)
	// takes it out of Held.
	OnDecide func(ctx context.Context, id string, release bool, reason string) error
	// Resume is what Resumed returns.
	Resume []message.Message
	// ReadyErr is what Ready returns.
	ReadyErr error
	// Declares is what Abilities says (leg.Declarer): the zero value, as
	// for a leg that declares nothing, unless a test sets it.
	Declares leg.Abilities
	// SettleAfter is what Settle returns (the Settles ability).
	SettleAfter time.Duration
	// LostNotices is what NoticesLost returns (the CountsNotices ability).
	LostNotices uint64

	started, stopped chan struct{}

	mu       sync.Mutex
	sessions []message.Session
	aliases  []message.Session
	held     []message.Held
	in       chan<- message.Event
	sent     []message.Message
	sentAs   []message.Message
	relayed  []message.Receipt
	synced   [][]message.Session
	decided  []Decision
	lists    int
}

// New returns a fake leg named name listing sessions.
func New(name message.Protocol, sessions ...message.Session) *Fake {
	return &Fake{name: name, sessions: slices.Clone(sessions), started: make(chan struct{}), stopped: make(chan struct{})}
}

// Name is the protocol the fake was made with.
func (f *Fake) Name() message.Protocol { return f.name }

// Sessions lists the roster (or what OnSessions says), counting the call.
func (f *Fake) Sessions(ctx context.Context) ([]message.Session, error) {
	f.mu.Lock()
	f.lists++
	ss := slices.Clone(f.sessions)
	f.mu.Unlock()
	if f.OnSessions != nil {
		return f.OnSessions(ctx)
	}
	return ss, nil
}

// Send records m and answers it.
func (f *Fake) Send(ctx context.Context, m message.Message) (message.Receipt, error) {
	f.mu.Lock()
	f.sent = append(f.sent, m)
	f.mu.Unlock()
	switch {
	case f.OnSend != nil:
		return f.OnSend(ctx, m)
	case f.SendErr != nil:
		return message.Receipt{}, f.SendErr
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
}

// Run records in for Emit, says it started, and waits for ctx (or runs
// OnRun). A fake runs once; after Run returns, Emit fails, as a leg that
// stopped hands on nothing.
func (f *Fake) Run(ctx context.Context, in chan<- message.Event) error {
	f.mu.Lock()
	f.in = in
	f.mu.Unlock()
	close(f.started)
	defer close(f.stopped)
	if f.OnRun != nil {
		return f.OnRun(ctx, in)
	}
	<-ctx.Done()
	return nil
}

// Started is closed once Run has its channel.
func (f *Fake) Started() <-chan struct{} { return f.started }

// Emit hands ev to the router through Run's channel, stamped with the
// fake's name unless it names a leg, as a leg's emitter does. It waits
// for Run to start and for room, failing the test after
// testutil.Patience; call it from the test's goroutine.
func (f *Fake) Emit(t testing.TB, ev message.Event) {
	t.Helper()
	if err := f.emit(ev, testutil.Patience); err != nil {
		t.Fatal(err)
	}
}

// ErrStopped is EmitFrom's answer once Run has returned.
var ErrStopped = errors.New("legtest: the fake's Run has returned")

// EmitFrom is Emit for a goroutine that is not the test's: it fails with
// an error rather than the test.
func (f *Fake) EmitFrom(ctx context.Context, ev message.Event) error {
	select {
	case <-f.started:
	case <-f.stopped:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	f.mu.Lock()
	in := f.in
	f.mu.Unlock()
	if ev.Leg == "" {
		ev.Leg = f.name
	}
	select {
	case <-f.stopped:
		return ErrStopped
	default:
	}
	select {
	case in <- ev:
		return nil
	case <-f.stopped:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *Fake) emit(ev message.Event, patience time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := f.EmitFrom(ctx, ev); err != nil {
		return fmt.Errorf("legtest: the %s fake could not hand on a %s event within %v: %w", f.name, ev.Type, patience, err)
	}
	return nil
}

// SetSessions replaces the roster.
func (f *Fake) SetSessions(ss ...message.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions = slices.Clone(ss)
}

// AddSession adds s to the roster.
func (f *Fake) AddSession(s message.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions = append(f.sessions, s)
}

// Sent is every message Send was given, in order.
func (f *Fake) Sent() []message.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// Lists counts the Sessions calls.
func (f *Fake) Lists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

// Claims answers with OnClaims (Claimer).
func (f *Fake) Claims(a addressing.Address) bool { return f.OnClaims != nil && f.OnClaims(a) }

// Recall answers with OnRecall (Recaller).
func (f *Fake) Recall(id string) (message.Message, message.Receipt, bool) {
	if f.OnRecall == nil {
		return message.Message{}, message.Receipt{}, false
	}
	return f.OnRecall(id)
}

// Resumed is Resume (Resumer).
func (f *Fake) Resumed() []message.Message { return slices.Clone(f.Resume) }

// Abilities is Declares (leg.Declarer).
func (f *Fake) Abilities() leg.Abilities { return f.Declares }

// Ready is ReadyErr (Readier).
func (f *Fake) Ready() error { return f.ReadyErr }

// Aliases lists what SetAliases set (AliasLister).
func (f *Fake) Aliases() []message.Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.aliases)
}

// SetAliases sets what Aliases lists.
func (f *Fake) SetAliases(ss ...message.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.aliases = slices.Clone(ss)
}

// SentAs is every message SendAs was given (HostsAliases).
func (f *Fake) SentAs() []message.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sentAs)
}

// Relayed is every receipt Relay was given (HostsAliases).
func (f *Fake) Relayed() []message.Receipt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.relayed)
}

// Synced is every set of sessions SyncAliases was given (HostsAliases).
func (f *Fake) Synced() [][]message.Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.synced)
}

// Hold adds held messages for Held to list (Holds).
func (f *Fake) Hold(h ...message.Held) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = append(f.held, h...)
}

// Decision is one Decide call.
type Decision struct {
	ID      string
	Release bool
	Reason  string
}

// Decided is every Decide call, in order (Holds).
func (f *Fake) Decided() []Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.decided)
}

// ErrNotHeld is Decide's answer for an id the fake does not hold.
var ErrNotHeld = errors.New("legtest: no such held message")

func (f *Fake) decide(ctx context.Context, id string, release bool, reason string) error {
	f.mu.Lock()
	f.decided = append(f.decided, Decision{ID: id, Release: release, Reason: reason})
	i := slices.IndexFunc(f.held, func(h message.Held) bool { return h.Message.ID == id })
	f.mu.Unlock()
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrNotHeld, id)
	}
	if f.OnDecide != nil {
		if err := f.OnDecide(ctx, id, release, reason); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = slices.DeleteFunc(f.held, func(h message.Held) bool { return h.Message.ID == id })
	return nil
}

func (f *Fake) heldList() []message.Held {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.held)
}

func (f *Fake) sendAs(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error) {
	f.mu.Lock()
	f.sentAs = append(f.sentAs, m)
	f.mu.Unlock()
	if f.OnSendAs != nil {
		return f.OnSendAs(ctx, sender, m)
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent}, nil
}

func (f *Fake) syncAliases(ss []message.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced = append(f.synced, slices.Clone(ss))
}

func (f *Fake) relay(rc message.Receipt) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.relayed = append(f.relayed, rc)
}

var _ interface {
	leg.Leg
	leg.Claimer
	leg.Recaller
	leg.Resumer
	leg.Readier
	leg.AliasLister
	leg.Declarer
} = (*Fake)(nil)
