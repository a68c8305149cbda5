package sessionsapi

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/internal/jsonx"
)

// AttestationField is the event field that carries the event's
// auth.Attestation (anthropic.ccr.client_event.v1) when the signer signs.
//
// Claude Code names the attestation and bind message types but not where
// they travel (docs/protocols/claude-ai-remote.md#canonical-signing); this placement is ours, shared with demo/fakecloud. The
// signature covers the RFC 8785 (JCS) form of the event WITHOUT this field,
// uuid included, so a verifier removes the field, canonicalises what is left
// and checks the attestation against those bytes (auth.Verify). With the
// none signer, or any attestation of algorithm none, nothing is attached.
const AttestationField = "client_attestation"

// UUIDField is the field every posted event carries, so that a retried post
// is recognised by the server instead of stored twice.
const UUIDField = "uuid"

// prepare gives each event a uuid, canonicalises and signs it, before any
// attempt is made: every retry then sends the very same bytes.
func (c *Client) prepare(ctx context.Context, op string, events []json.RawMessage) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(events))
	for i, e := range events {
		p, err := c.prepareOne(ctx, e)
		if err != nil {
			return nil, &EventError{Op: op, Index: i, Err: err}
		}
		out[i] = p
	}
	return out, nil
}

func (c *Client) prepareOne(ctx context.Context, e json.RawMessage) (json.RawMessage, error) {
	// Our JCS checks run on the caller's bytes first: encoding/json would
	// quietly repair invalid UTF-8 and keep the last of two duplicate names,
	// so that what we sign and what the caller meant could differ.
	if _, err := Canonicalize(e); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(e, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrInvalidEvent)
	}
	if _, ok := obj[AttestationField]; ok {
		return nil, fmt.Errorf("%w: it already carries %s", ErrInvalidEvent, AttestationField)
	}
	if err := ensureUUID(obj); err != nil {
		return nil, err
	}
	unsigned, err := jsonx.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	canonical, err := Canonicalize(unsigned)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	att, err := c.signer.Sign(ctx, canonical)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	if att.Algorithm == auth.AlgNone {
		return unsigned, nil
	}
	if obj[AttestationField], err = json.Marshal(att); err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return jsonx.Marshal(obj)
}

// ensureUUID adds a random uuid to an event that has none (or null or "").
func ensureUUID(obj map[string]json.RawMessage) error {
	raw, ok := obj[UUIDField]
	if ok && !isNull(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("%w: %s is not a string", ErrInvalidEvent, UUIDField)
		}
		if s != "" {
			return nil
		}
	}
	obj[UUIDField], _ = json.Marshal(uuid.NewString())
	return nil
}

// ErrEventUnsigned is returned by VerifyEvent for an event with no
// attestation.
var ErrEventUnsigned = errors.New("event carries no " + AttestationField)

// VerifyEvent checks a posted event's attestation the way a server would:
// it removes AttestationField, canonicalises the rest and verifies the
// attestation over those bytes with auth.Verify and pub. It documents the
// placement and serves fakes and self-hosted servers.
func VerifyEvent(event json.RawMessage, pub ed25519.PublicKey) error {
	if _, err := Canonicalize(event); err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(event, &obj); err != nil || obj == nil {
		return fmt.Errorf("%w: not a JSON object", ErrInvalidEvent)
	}
	raw, ok := obj[AttestationField]
	if !ok {
		return ErrEventUnsigned
	}
	delete(obj, AttestationField)
	var att auth.Attestation
	if err := json.Unmarshal(raw, &att); err != nil {
		return fmt.Errorf("%s: %w", AttestationField, err)
	}
	rest, err := jsonx.Marshal(obj)
	if err != nil {
		return err
	}
	canonical, err := Canonicalize(rest)
	if err != nil {
		return err
	}
	return auth.Verify(att, canonical, pub)
}
