package leg

import (
	"context"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/message"
)

// Leg is what every leg offers the router.
type Leg interface {
	Name() message.Protocol
	// Sessions lists who is reachable now.
	Sessions(ctx context.Context) ([]message.Session, error)
	// Send writes m to m.To and returns the first receipt: sent or failed,
	// or queued from a leg that keeps what it accepts (the outbox, whose
	// Recall then finds it; the federation while its link is down).
	Send(ctx context.Context, m message.Message) (message.Receipt, error)
	// Run delivers inbound messages, receipts and notices to in until ctx ends.
	Run(ctx context.Context, in chan<- message.Event) error
}

// Claimer is a leg that can reach addresses absent from its roster, such as a
// raw socket path.
type Claimer interface {
	Claims(a addressing.Address) bool
}

// Settler is a leg whose receivers send no receipt for a clean delivery
// (Claude Code). A sent message with no receipt after Settle() is reported
// delivered, marked as inferred.
type Settler interface {
	Settle() time.Duration
}

// Holder is a leg that holds inbound messages for a person to decide.
type Holder interface {
	Held() []message.Held
	// Decide releases (deliver) or denies the held message id.
	Decide(ctx context.Context, id string, release bool, reason string) error
}

// IdleSubscriber is a leg whose peers can tell when they go idle.
type IdleSubscriber interface {
	NotifyWhenIdle(ctx context.Context, target message.Session) (subID string, err error)
}

// AliasHost is a leg that shows sessions of other legs under their names,
// so its own sessions can reach them natively (the bridge).
type AliasHost interface {
	// SyncAliases publishes exactly these sessions of other legs.
	SyncAliases(ctx context.Context, others []message.Session) error
	// SendAs sends m from the alias standing for sender (a session of
	// another leg), creating the alias if it has none yet.
	SendAs(ctx context.Context, sender message.Session, m message.Message) (message.Receipt, error)
	// Relay tells the sender of in, which arrived at one of our aliases,
	// what became of it on the other leg.
	Relay(ctx context.Context, in message.Message, rc message.Receipt)
}

// AliasLister is an AliasHost that lists the aliases it publishes, each
// with AliasOf set to the address it stands for and Kind AliasKind.
type AliasLister interface {
	Aliases() []message.Session
}

// Prompter is a leg whose sessions ask for permission to use a tool (the
// remote leg). It publishes each prompt as an EventPermission from Run, in
// state pending when it appears (again after a reconnect: the router keeps
// one entry per session and request id) and cancelled when the session
// withdraws it; the router assigns the short id.
type Prompter interface {
	// Answer sends a as the answer to req. A nil error means the server
	// accepted it.
	Answer(ctx context.Context, req message.PermissionRequest, a message.PermissionAnswer) error
}

// Controllable is a leg whose sessions take control requests: interrupt,
// set_permission_mode, set_model. Control reports the session's answer: a
// *message.ControlRefusedError for an error answer, message.ErrNoControlAnswer
// for none in time.
type Controllable interface {
	Control(ctx context.Context, target message.Session, c message.Control) (message.ControlResult, error)
}

// Describer is a leg that can say what a session told about itself (the
// remote leg: initialize's answer, its mode and model). A session the leg
// does not know is an *addressing.NotFoundError; a wrapper (the outbox)
// whose inner leg cannot describe says message.ErrNotControllable.
type Describer interface {
	Info(ctx context.Context, target message.Session) (message.SessionInfo, error)
}

// Resumer is a leg that carries messages accepted before a restart (a
// durable outbox): the router tracks them again, so their receipts reach
// watchers and Message, as any send's do.
type Resumer interface {
	Resumed() []message.Message
}

// Recaller is a leg that keeps what it accepted (a durable outbox): it
// can say where a message it took stands after the router forgot it, so
// an idempotent retry is answered without sending again (Replay).
type Recaller interface {
	Recall(id string) (message.Message, message.Receipt, bool)
}

// Readier is a leg that can say whether it is ready to carry messages
// (registered, its roster fetched, its store writable); a leg without it
// is always ready. The router reports it with Ready.
type Readier interface {
	Ready() error
}

// Outboxer is a leg that keeps what it accepted on disk until a server
// acknowledges it (outbox.Leg).
type Outboxer interface {
	// Outbox lists the messages waiting for an acknowledgement, oldest
	// first; all adds the recently acknowledged and failed ones.
	Outbox(all bool) ([]message.OutboxItem, error)
	// Depth counts the messages waiting for an acknowledgement without
	// reading them: status and metrics ask often, and a listing decodes
	// every stored body.
	Depth() int
}

// Waker is a leg whose followed sessions may go dormant (the remote leg's
// streams after an idle while): Wake brings the one with this session id
// back at once.
type Waker interface {
	Wake(sessionID string)
}

// Lifecycler is a leg whose sessions can be created, retitled and
// archived, in environments it lists (the remote leg).
type Lifecycler interface {
	Create(ctx context.Context, n message.NewRemoteSession) (message.Session, error)
	// Retitle and Archive change target and return it as its leg now
	// shows it.
	Retitle(ctx context.Context, target message.Session, title string) (message.Session, error)
	Archive(ctx context.Context, target message.Session) (message.Session, error)
	Environments(ctx context.Context) ([]message.Environment, error)
}

// FileCarrier is a leg that carries a message's attachments (Claude Code's
// staged files, the remote leg's file_attachments). The router fails a
// message with files to a leg without it, rather than drop them unsaid.
type FileCarrier interface {
	CarriesFiles()
}

// Abilities is what a leg declares about itself that the router would
// otherwise have to know from its name. The zero value is an ordinary
// local leg: its sessions are this host's, reached by name, and sent to
// over their own socket or stream.
type Abilities struct {
	// OtherHosts: its sessions live on other gateways' hosts (the
	// federation leg). They carry their own Host, which the router leaves
	// as it is, and a name or ref resolves to one of them only when no
	// local session matches: local first.
	OtherHosts bool
	// ClaimsLeftNames: a name no listed session has may be one it still
	// answers for (an MCP client that just left, whose receipt says so),
	// so the router asks its Claims about names, before other hosts.
	ClaimsLeftNames bool
	// CloudSessions: its sessions are claude.ai's own (the remote leg). A
	// bridge:<id> naming a local session's bridgeSessionId goes to that
	// local session over its socket; a session of this leg is never that
	// local match.
	CloudSessions bool
	// BridgesOwnSends: what its sessions send to another leg's session
	// takes the bridge's road even with the bridge off (the MCP leg: that
	// is how a client's message goes out as from it).
	BridgesOwnSends bool
	// ReraisesCancelled: a prompt it cancelled may be raised again,
	// pending, under the same request id (another host's prompt,
	// withdrawn while that host was unreachable and listed again by it).
	ReraisesCancelled bool
}

// Declarer is a leg that declares Abilities; a leg without it has the
// zero value.
type Declarer interface {
	Abilities() Abilities
}

// AbilitiesOf is what l declares, or the zero value when it declares
// nothing.
func AbilitiesOf(l Leg) Abilities {
	if d, ok := l.(Declarer); ok {
		return d.Abilities()
	}
	return Abilities{}
}

// Stopper is a leg that can end one of its sessions (a hosted session, a
// background agent).
type Stopper interface {
	// Stop ends the session; a hosted one is no longer resumed.
	Stop(ctx context.Context, target message.Session) error
}

// Starter is a leg that starts sessions of its own (the hosted leg: a CLI
// run headless) and stops them.
type Starter interface {
	// Start runs a session as spec asks and returns it once it is listed;
	// errors match message.ErrBadStart, ErrTooManyHosted or ErrAgentMissing.
	Start(ctx context.Context, spec message.StartSpec) (message.Session, error)
	Stopper
}

// Dispatcher is a leg that hands new work to someone else's runner (the
// Claude Code daemon's background agents): a new session whose first
// prompt is text, working in cwd.
type Dispatcher interface {
	Dispatch(ctx context.Context, text, cwd string) (message.Session, error)
}
