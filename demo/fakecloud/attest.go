package fakecloud

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

// attestationField is where a posted event carries its attestation. Claude
// Code names the attestation type but not where it travels; this placement is the
// one leg/remote/sessionsapi uses, and the signed bytes are the JCS form of
// the event without this field.
const attestationField = "client_attestation"

// Classification is how the server classed a posted event against the
// session's device binding (unattested events classify bound_unattested:
// docs/protocols/claude-ai-remote.md#canonical-signing).
type Classification uint8

const (
	// ClassUnbound: no DeviceKey is set, so nothing was checked.
	ClassUnbound Classification = iota + 1
	// ClassAttested: the event carried a valid attestation by DeviceKey.
	ClassAttested
	// ClassBoundUnattested: the session is bound but the event carried no
	// signature (no attestation, or one with algorithm none).
	ClassBoundUnattested
)

var classWire = [...]string{
	ClassUnbound: "unbound", ClassAttested: "attested", ClassBoundUnattested: "bound_unattested",
}

func (c Classification) String() string { return classWire[c] }

// ErrBadAttestation: a posted event's client_attestation does not verify.
var ErrBadAttestation = errors.New("invalid client_attestation")

// classify checks a posted event's attestation against DeviceKey.
func (s *Server) classify(event json.RawMessage) (Classification, error) {
	key := s.opts.DeviceKey
	if key == nil {
		return ClassUnbound, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(event, &obj); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrBadAttestation, err)
	}
	raw, ok := obj[attestationField]
	if !ok || string(raw) == "null" {
		return ClassBoundUnattested, nil
	}
	var a auth.Attestation
	if err := json.Unmarshal(raw, &a); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrBadAttestation, err)
	}
	delete(obj, attestationField)
	b, err := json.Marshal(obj)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrBadAttestation, err)
	}
	canonical, err := sessionsapi.Canonicalize(b)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrBadAttestation, err)
	}
	switch err := auth.Verify(a, canonical, key); {
	case err == nil:
		return ClassAttested, nil
	case errors.Is(err, auth.ErrUnsigned):
		// An unsigned attestation must still name the bytes it came with.
		sum := sha256.Sum256(canonical)
		if a.PayloadSHA256 != hex.EncodeToString(sum[:]) {
			return 0, fmt.Errorf("%w: %v", ErrBadAttestation, auth.ErrDigestMismatch)
		}
		return ClassBoundUnattested, nil
	default:
		return 0, fmt.Errorf("%w: %v", ErrBadAttestation, err)
	}
}

// Classifications returns how each event posted to the session was classed
// ("unbound", "attested", "bound_unattested"), in post order. Refused posts
// and duplicates are not classed.
func (s *Server) Classifications(sessionID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[sessionID]
	if !ok {
		return nil
	}
	out := make([]string, len(ss.classes))
	for i, c := range ss.classes {
		out[i] = c.String()
	}
	return out
}
