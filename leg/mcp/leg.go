package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Limits of the leg.
const (
	// MaxClients caps the MCP clients connected at once; one more is
	// refused at initialize.
	MaxClients = 256
	// KeepSent is how many of its clients' sent messages the leg
	// remembers for get_message_status.
	KeepSent = 4096
	// KeepLeft is how many disconnected clients' names the leg remembers,
	// for LeftFor, so a message to one is answered with a receipt saying
	// it left rather than "no such session".
	KeepLeft = 1024
	// LeftFor is how long a disconnected client's name is remembered.
	LeftFor = 10 * time.Minute
)

// AddressPrefix starts every MCP client's address: mcp:NAME. It parses as
// a name, so it needs no address form of its own.
const AddressPrefix = "mcp:"

// ErrTooManyClients refuses a client past MaxClients.
var ErrTooManyClients = errors.New("mcp: too many clients connected to this gateway")

// Leg is the router's view of the MCP clients: each one a session named as
// it asked, with a bounded inbox. It is an alias host to the router, so
// what a client sends travels the bridge (the target sees the client's
// name as sender) and the receipts come back through Relay. The MCP
// server holds it as its own small interface: a client joins and leaves
// (Join, Leave), sends (Submit, Sent) and reads its inbox (Read, Unread).
type Leg struct {
	clk clock.Clock

	mu      sync.Mutex
	clients map[string]*client // by name
	emitter *leg.Emitter       // attached while Run runs

	sent *bounded.Map[string, *sent]     // what the clients sent, by message id
	left *bounded.Map[string, time.Time] // names of clients gone, when they left

	prompts prompts // channel prompts waiting (prompts.go)
}

var (
	_ leg.Leg       = (*Leg)(nil)
	_ leg.AliasHost = (*Leg)(nil)
	_ leg.Claimer   = (*Leg)(nil)
	_ leg.Declarer  = (*Leg)(nil)
)

// NewLeg returns a leg with no clients; c nil is the wall clock.
func NewLeg(c clock.Clock) *Leg {
	c = clock.Or(c)
	return &Leg{clk: c, emitter: leg.NewEmitter(message.ProtocolMCP, c.Now), clients: map[string]*client{},
		sent: bounded.NewMap[string, *sent](KeepSent), left: bounded.NewMap[string, time.Time](KeepLeft)}
}

// client is one connected MCP client, a session of the leg.
type client struct {
	session message.Session
	inbox   *inbox
	push    func(message.Message) // tells the client a message arrived; may be nil
}

// sent is one message a client sent, as its receipts tell.
type sent struct {
	mu      sync.Mutex
	msg     message.Message
	track   *message.Tracker
	changed chan struct{}
}

func (l *Leg) Name() message.Protocol { return message.ProtocolMCP }

// Sessions lists the connected clients, by name.
func (l *Leg) Sessions(context.Context) ([]message.Session, error) {
	l.mu.Lock()
	out := make([]message.Session, 0, len(l.clients))
	for _, c := range l.clients {
		out = append(out, c.session)
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Join adds a client under name, or under name-2, name-3... when that is
// taken, so each name stands for one client, and returns its session;
// push (nil for none) is told of each message put in its inbox. kind is
// the client's transport, shown in the roster.
func (l *Leg) Join(name, kind string, push func(message.Message)) (message.Session, error) {
	if name == "" {
		name = "mcp"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.clients) >= MaxClients {
		return message.Session{}, ErrTooManyClients
	}
	unique := name
	for i := 2; l.clients[unique] != nil; i++ {
		unique = name + "-" + strconv.Itoa(i)
	}
	ref := make([]byte, 3)
	_, _ = rand.Read(ref)
	c := &client{push: push, inbox: newInbox(InboxSize), session: message.Session{
		Address: AddressPrefix + unique, Protocol: message.ProtocolMCP, Name: unique, Ref: hex.EncodeToString(ref),
		SessionID: uuid.NewString(), Kind: kind, Status: "connected", Reachable: true, StartedAt: l.clk.Now(),
	}}
	l.clients[unique] = c
	l.left.Delete(unique)
	return c.session, nil
}

// lookup is the client of the session me while it is in the roster: a
// later client under the same name is another session (its SessionID).
func (l *Leg) lookup(me message.Session) *client {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.clients[me.Name]; c != nil && c.session.SessionID == me.SessionID {
		return c
	}
	return nil
}

// Leave takes the client of me out of the roster at once (a second time
// does nothing); what waits unread in its inbox is answered dropped
// (reason disconnected).
func (l *Leg) Leave(me message.Session) {
	l.mu.Lock()
	c := l.clients[me.Name]
	if c == nil || c.session.SessionID != me.SessionID {
		l.mu.Unlock()
		return
	}
	delete(l.clients, me.Name)
	l.left.Put(me.Name, l.clk.Now())
	l.mu.Unlock()
	l.withdraw(me.SessionID)
	for _, m := range c.inbox.close() {
		l.receipt(message.Receipt{MsgID: m.ID, Status: message.StatusDropped, DropReason: message.DropDisconnected, Reason: leftReason(me.Name), From: me.Address})
	}
}

func leftReason(name string) string {
	return fmt.Sprintf("%s disconnected: its MCP client left the gateway before reading the message", name)
}

// Claims takes a name of a client that left within LeftFor, so that a
// message to it gets a failed receipt saying so, not "no such session".
func (l *Leg) Claims(a addressing.Address) bool {
	_, ok := l.leftAt(a)
	return ok
}

func (l *Leg) leftAt(a addressing.Address) (time.Time, bool) {
	if a.Kind != addressing.KindName {
		return time.Time{}, false
	}
	name := strings.TrimPrefix(a.Name, AddressPrefix)
	at, ok := l.left.Get(name)
	if !ok || l.clk.Now().Sub(at) > LeftFor {
		return time.Time{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return at, l.clients[name] == nil
}

// Send puts m in the inbox of the client m.To names: sent when it is in,
// dropped (queue-full) when the inbox is full, failed when the client has
// left. Reading it (wait_for_messages) is its delivered receipt.
func (l *Leg) Send(_ context.Context, m message.Message) (message.Receipt, error) {
	now := l.clk.Now()
	name := strings.TrimPrefix(m.To, AddressPrefix)
	l.mu.Lock()
	c := l.clients[name]
	l.mu.Unlock()
	if c == nil {
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: leftReason(name), From: m.To, Time: now}, nil
	}
	switch err := c.inbox.put(m); {
	case errors.Is(err, errInboxFull):
		return message.Receipt{MsgID: m.ID, Status: message.StatusDropped, DropReason: message.DropQueueFull,
			Reason: fmt.Sprintf("%s's inbox is full (%d messages unread)", name, InboxSize), From: m.To, Time: now}, nil
	case err != nil:
		return message.Receipt{MsgID: m.ID, Status: message.StatusFailed, Reason: leftReason(name), From: m.To, Time: now}, nil
	}
	if c.push != nil {
		c.push(m)
	}
	return message.Receipt{MsgID: m.ID, Status: message.StatusSent, From: m.To, Time: now}, nil
}

// SyncAliases does nothing: an MCP client reaches others by name.
func (l *Leg) SyncAliases(context.Context, []message.Session) error { return nil }

// SendAs puts m, from sender (a session of another leg), in a client's
// inbox; the client sees the sender's name and can answer it by name.
func (l *Leg) SendAs(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error) {
	m.From, m.FromName, m.FromSession = sender.Address, sender.Name, sender.SessionID
	if m.Protocol == "" || m.Protocol == message.ProtocolMCP {
		m.Protocol = sender.Protocol
	}
	return l.Send(ctx, m)
}

// Relay records what became of in, a message a client sent.
func (l *Leg) Relay(_ context.Context, in message.Message, rc message.Receipt) {
	s, ok := l.sent.Get(in.ID)
	if !ok {
		return
	}
	rc.MsgID = in.ID
	if rc.Time.IsZero() {
		rc.Time = l.clk.Now()
	}
	s.apply(rc)
}

// Run hands the clients' messages and their inboxes' receipts to in until
// ctx ends.
func (l *Leg) Run(ctx context.Context, in chan<- message.Event) error {
	l.emitter.Attach(in)
	<-ctx.Done()
	l.emitter.Close()
	return nil
}

// ErrNotRunning is a send while the gateway is not routing.
var ErrNotRunning = errors.New("mcp: the gateway is not routing messages (shutting down?)")

// Submit hands body, from the client of me to the session target, to the
// router as a message that arrived at an alias of target: the bridge
// forwards it as from me. It returns the message's id, for Sent.
func (l *Leg) Submit(ctx context.Context, me, target message.Session, body string) (string, error) {
	if !l.emitter.Attached() {
		return "", ErrNotRunning
	}
	m := message.Message{ID: uuid.NewString(), From: me.Address, FromName: me.Name, FromSession: me.SessionID,
		To: target.Address, ToName: target.Name, AliasOf: target.Address, Body: body, Protocol: message.ProtocolMCP, Time: l.clk.Now(),
		// An MCP client attests no review class of its own: it is taken
		// for prompting, so a receiver's mode parity never lets it pass
		// for a session that runs unreviewed.
		Mode: message.ModePrompting}
	s := &sent{msg: m, track: message.NewTracker(), changed: make(chan struct{})}
	l.sent.Put(m.ID, s)
	if l.emitter.Emit(ctx, message.Event{Type: message.EventMessage, Time: m.Time, Message: &m}) {
		return m.ID, nil
	}
	l.sent.Delete(m.ID)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return "", ErrNotRunning // the leg stopped meanwhile
}

// Sent is where the message id, which a client sent, stands: the name it
// was sent to and its tracker. With final it first waits until the status
// is final or ctx ends. An id the leg does not remember (it forgets the
// oldest past KeepSent) is an error that says so.
func (l *Leg) Sent(ctx context.Context, id string, final bool) (to string, t message.Tracker, err error) {
	s, ok := l.sent.Get(id)
	if !ok {
		return "", message.Tracker{}, fmt.Errorf("no message has id %q: give an id send_message returned (the gateway forgets the oldest past %d)", id, KeepSent)
	}
	if final {
		s.wait(ctx)
	}
	t, _ = s.status()
	return s.msg.ToName, t, nil
}

// ErrLeft is a read of the inbox of a client no longer in the roster.
var ErrLeft = errors.New("mcp: the client has left the roster")

// Read takes messages from the inbox of me: it forgets every message up to
// cursor (the leg's own read mark when cursor is 0 or past it) and hands
// each up to limit of those after it to each, with its number, waiting
// until there is one or ctx ends. It returns the cursor to pass next time.
// A message read for the first time is delivered (its receipt).
func (l *Leg) Read(ctx context.Context, me message.Session, cursor uint64, limit int, each func(seq uint64, m message.Message)) (uint64, error) {
	c := l.lookup(me)
	if c == nil {
		return cursor, ErrLeft
	}
	got, next, fresh, err := c.inbox.take(ctx, cursor, limit)
	if err != nil {
		return next, ErrLeft
	}
	for _, m := range fresh {
		l.receipt(message.Receipt{MsgID: m.ID, Status: message.StatusDelivered, From: me.Address})
	}
	for _, q := range got {
		each(q.seq, q.msg)
	}
	return next, nil
}

// Unread counts the messages in the inbox of me not yet read; 0 once it
// has left.
func (l *Leg) Unread(me message.Session) int {
	if c := l.lookup(me); c != nil {
		return c.inbox.unread()
	}
	return 0
}

// receipt reports rc, about a message in a client's inbox, to the router.
func (l *Leg) receipt(rc message.Receipt) {
	if rc.Time.IsZero() {
		rc.Time = l.clk.Now()
	}
	// Never waits: when the router's queue is full (or the leg is not
	// running) the receipt is lost, the message is not.
	l.emitter.Offer(message.Event{Type: message.EventReceipt, Time: rc.Time, Receipt: &rc})
}

func (s *sent) apply(rc message.Receipt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.track.Apply(rc) {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// status is the message's tracker now, and a channel closed when it moves.
func (s *sent) status() (message.Tracker, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return message.Tracker{Status: s.track.Status, Receipts: append([]message.Receipt{}, s.track.Receipts...)}, s.changed
}

// wait blocks until the message has a final status or ctx ends.
func (s *sent) wait(ctx context.Context) {
	for {
		t, changed := s.status()
		if t.Status.Final() {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}
