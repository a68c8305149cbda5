package message

import "time"

// Protocol names the leg a session lives on.
type Protocol string

const (
	ProtocolClaude Protocol = "claude"
	ProtocolQwen   Protocol = "qwen"
	ProtocolRemote Protocol = "remote"
	// ProtocolFederation is the leg that reaches sessions on other
	// gateways over NATS (package federation).
	ProtocolFederation Protocol = "federation"
	// ProtocolMCP is the leg whose sessions are MCP clients of the
	// gateway (package mcp).
	ProtocolMCP Protocol = "mcp"
	// ProtocolClaudeBG is the leg of Claude Code's background agents
	// (`claude --bg`), reached through their daemon's control socket
	// (package claudebg).
	ProtocolClaudeBG Protocol = "claude-bg"
)

// Attachment is a file sent along with a message, already staged by the
// sending leg so the receiver can copy it.
type Attachment struct {
	Path      string `json:"path"`
	FileName  string `json:"file_name"`
	FileSize  int64  `json:"file_size"`
	SHA256    string `json:"sha256"`
	MediaType string `json:"media_type,omitempty"`
	// Refused says why an inbound attachment was not kept; its Path is
	// then empty and the message is delivered without the file.
	Refused AttachmentRefusal `json:"refused,omitempty"`
}

// AttachmentRefusal is why an inbound attachment was not kept.
type AttachmentRefusal string

const (
	// AttachmentUnauthenticated: the sender presented no token, so nothing
	// it names is read or copied.
	AttachmentUnauthenticated AttachmentRefusal = "unauthenticated"
	// AttachmentOverQuota: keeping it would take the uploads directory
	// past its quota.
	AttachmentOverQuota AttachmentRefusal = "uploads-quota"
	// AttachmentInvalid: the descriptor failed the receiver's checks (path
	// outside the spool, not a regular file, size or sha256 mismatch).
	AttachmentInvalid AttachmentRefusal = "invalid"
	// AttachmentUnstored: it passed the checks but could not be written.
	AttachmentUnstored AttachmentRefusal = "unstored"
)

// Message is one peer message, whichever leg it came from or goes to.
type Message struct {
	ID          string       `json:"id"`
	From        string       `json:"from,omitempty"`         // sender address as printed by addressing
	FromName    string       `json:"from_name,omitempty"`    // sender's display name
	FromSession string       `json:"from_session,omitempty"` // sender's session id
	To          string       `json:"to,omitempty"`           // target address
	ToName      string       `json:"to_name,omitempty"`
	ToPID       int          `json:"to_pid,omitempty"`        // target process, when a roster knows it
	ToSessionID string       `json:"to_session_id,omitempty"` // target session, when a roster knows it
	Body        string       `json:"body"`
	Mode        Mode         `json:"mode,omitempty"`
	HopChain    []string     `json:"hop_chain,omitempty"`
	Attested    bool         `json:"attested"` // envelope parsed and round-tripped
	Auth        AuthClass    `json:"auth,omitempty"`
	Controller  string       `json:"controller,omitempty"` // with AuthController: the grant's label
	Protocol    Protocol     `json:"protocol,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
	Plugin      string       `json:"from_plugin,omitempty"`
	// SenderPID is the process that wrote the message to the gateway's
	// socket, as the kernel says (SO_PEERCRED), set by the local legs;
	// 0 for messages that came another way. Never read from the wire:
	// what a frame claims (From, FromSession) any process can write.
	SenderPID int `json:"-"`
	// AliasOf is set on a message that arrived at one of the gateway's
	// aliases: the address of the session on another leg it stands for.
	AliasOf string `json:"alias_of,omitempty"`
	// Unpaced skips the sender-side mirror of the receiver's limits, so a
	// send the receiver would drop is written anyway and its dropped
	// receipt heard (for tests and diagnosis).
	Unpaced bool      `json:"unpaced,omitempty"`
	Time    time.Time `json:"time"`
}

// AuthClass is how an inbound connection proved itself.
type AuthClass string

const (
	AuthPeer            AuthClass = "peer"            // presented our peerToken
	AuthChild           AuthClass = "child"           // presented our childToken
	AuthUnauthenticated AuthClass = "unauthenticated" // no or wrong token
	AuthController      AuthClass = "controller"      // presented a controller grant (Qwen)
)

// Session is one live session a leg can reach.
type Session struct {
	Address   string    `json:"address"`
	Protocol  Protocol  `json:"protocol"`
	Name      string    `json:"name"`
	Ref       string    `json:"ref"`
	NativeRef string    `json:"native_ref,omitempty"` // the ref the session's own CLI shows, when different
	SessionID string    `json:"session_id"`
	PID       int       `json:"pid"` // 0 when no local process stands for it (remote sessions)
	Kind      string    `json:"kind"`
	Status    string    `json:"status,omitempty"`
	Cwd       string    `json:"cwd,omitempty"`
	Version   string    `json:"version,omitempty"`
	Reachable bool      `json:"reachable"`
	StartedAt time.Time `json:"started_at,omitzero"` // zero when unknown: left out
	// Title is a remote session's title; Name is the alias name derived
	// from it.
	Title string `json:"title,omitempty"`
	// AliasOf is set on an alias the gateway publishes on a local leg: the
	// address of the session it stands for (a remote session's bridge:<id>).
	AliasOf string `json:"alias_of,omitempty"`
	// Stale says the session comes from its leg's last good listing: the
	// leg could not list afresh (its service unreachable or too slow).
	Stale bool `json:"stale,omitempty"`
	// Host is the federation host name of the gateway that reaches the
	// session, when federation is on.
	Host string `json:"host,omitempty"`
	// BridgeSessionID is a local Claude Code session's bridgeSessionId
	// (its registry entry, when signed in): bridge:<it> reaches the
	// session over its local socket.
	BridgeSessionID string `json:"bridge_session_id,omitempty"`
}
