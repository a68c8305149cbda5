package auth

// Session-bind messages (docs/protocols/claude-ai-remote.md#canonical-signing): a session is bound to a device, and the
// server then expects that device's attestation on the session's events; an
// event without one is classified bound_unattested. Claude Code gives the type
// names and boundDeviceUuid; the other field names are ours, in the same
// camelCase, and are what our fake server and client agree on.

// CreateSessionBind (anthropic.ccr.create_session_bind.v1) asks the server to
// bind a session to the device holding a key, proved by Attestation: the
// attestation of the JCS form of this message with Attestation left empty.
type CreateSessionBind struct {
	// Type is always CreateSessionBindV1.
	Type string `json:"type"`
	// SessionID is the session being bound (a bridge or cloud session id).
	SessionID string `json:"sessionId"`
	// BoundDeviceUUID is the trusted device the session is bound to.
	BoundDeviceUUID string `json:"boundDeviceUuid"`
	// Algorithm and KeyID name the key events will be signed with.
	Algorithm Algorithm `json:"algorithm"`
	KeyID     string    `json:"keyId,omitempty"`
	// PublicKey is the raw public key (standard base64 in JSON), for servers
	// that do not know the device's key yet, such as a self-hosted one.
	PublicKey []byte `json:"publicKey,omitempty"`
	// Attestation proves possession of the key; nil for AlgNone.
	Attestation *Attestation `json:"attestation,omitempty"`
}

// SessionBind (anthropic.ccr.session_bind.v1) is the server's record of a
// binding, as returned by the bind request and listed with the session.
type SessionBind struct {
	// Type is always SessionBindV1.
	Type            string    `json:"type"`
	SessionID       string    `json:"sessionId"`
	BoundDeviceUUID string    `json:"boundDeviceUuid"`
	Algorithm       Algorithm `json:"algorithm"`
	KeyID           string    `json:"keyId,omitempty"`
	// BoundAt is when the server made the binding, RFC 3339, as the server
	// spells it (kept a string so that no reformatting changes signed bytes).
	BoundAt string `json:"boundAt,omitempty"`
}
