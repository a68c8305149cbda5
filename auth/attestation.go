package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Wire names of Claude Code's event signing
// (docs/protocols/claude-ai-remote.md#canonical-signing). Only these strings
// are Claude Code's; the field names around them are ours, chosen to match
// the camelCase of boundDeviceUuid.
const (
	ClientEventV1       = "anthropic.ccr.client_event.v1"
	CreateSessionBindV1 = "anthropic.ccr.create_session_bind.v1"
	SessionBindV1       = "anthropic.ccr.session_bind.v1"
	// CanonicalizationJCS names the canonical form a signature covers.
	CanonicalizationJCS = "claude-code-jcs@1"
)

// Algorithm is how an attestation was made; its value is its wire spelling.
type Algorithm string

const (
	AlgNone    Algorithm = "none"    // unsigned: the server may classify the event bound_unattested
	AlgEd25519 Algorithm = "ed25519" // RFC 8032 Ed25519 over the canonical bytes themselves
)

// Attestation is an anthropic.ccr.client_event.v1 attestation: a statement
// that the device holding KeyID saw exactly the canonical bytes whose SHA-256
// is PayloadSHA256.
type Attestation struct {
	// Type is always ClientEventV1.
	Type string `json:"type"`
	// Canonicalization is always CanonicalizationJCS: the bytes signed are the
	// RFC 8785 form of the event payload.
	Canonicalization string `json:"canonicalization"`
	// Algorithm is AlgNone or AlgEd25519 (an exec signer may name others,
	// which Verify does not know).
	Algorithm Algorithm `json:"algorithm"`
	// KeyID is the lowercase hex SHA-256 of the raw public key; empty when
	// unsigned.
	KeyID string `json:"keyId,omitempty"`
	// PayloadSHA256 is the lowercase hex SHA-256 of the canonical bytes, so
	// the binding can be checked without the signature.
	PayloadSHA256 string `json:"payloadSha256"`
	// Signature is over the canonical bytes (not the digest); standard base64
	// in JSON; empty when unsigned.
	Signature []byte `json:"signature,omitempty"`
}

// Signed says whether a carries a signature at all.
func (a Attestation) Signed() bool { return a.Algorithm != AlgNone && len(a.Signature) > 0 }

// Signer is the device-signing boundary: it attests canonical bytes it is
// given and never sees, nor is asked for, the key's private half.
type Signer interface {
	Sign(ctx context.Context, canonical []byte) (Attestation, error)
}

// Errors from Verify and the signers, to be matched with errors.Is.
var (
	ErrUnsigned         = errors.New("auth: attestation is unsigned (algorithm none)")
	ErrUnknownAlgorithm = errors.New("auth: unknown attestation algorithm")
	ErrWrongType        = errors.New("auth: not an " + ClientEventV1 + " attestation")
	ErrDigestMismatch   = errors.New("auth: attestation is for other bytes (payloadSha256 differs)")
	ErrKeyMismatch      = errors.New("auth: attestation names another key")
	ErrBadSignature     = errors.New("auth: signature does not verify")
)

// KeyID is the key id of pub: the lowercase hex SHA-256 of its 32 raw bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:])
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// unsigned is the attestation of a signer that does not sign.
func unsigned(canonical []byte) Attestation {
	return Attestation{Type: ClientEventV1, Canonicalization: CanonicalizationJCS,
		Algorithm: AlgNone, PayloadSHA256: digest(canonical)}
}

// Verify checks that a is a valid Ed25519 attestation of canonical by pub.
// It is what a self-hosted server (and our tests) would do; an unsigned
// attestation is reported as ErrUnsigned, not as valid.
func Verify(a Attestation, canonical []byte, pub ed25519.PublicKey) error {
	if a.Type != ClientEventV1 || a.Canonicalization != CanonicalizationJCS {
		return fmt.Errorf("%w: type %q, canonicalization %q", ErrWrongType, a.Type, a.Canonicalization)
	}
	switch a.Algorithm {
	case AlgNone:
		return ErrUnsigned
	case AlgEd25519:
	default:
		return fmt.Errorf("%w: %q", ErrUnknownAlgorithm, a.Algorithm)
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("auth: public key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	if a.KeyID != KeyID(pub) {
		return fmt.Errorf("%w: %q", ErrKeyMismatch, a.KeyID)
	}
	if a.PayloadSHA256 != digest(canonical) {
		return ErrDigestMismatch
	}
	if !ed25519.Verify(pub, canonical, a.Signature) {
		return ErrBadSignature
	}
	return nil
}

type noneSigner struct{}

// NewNoneSigner returns the signer for a gateway with no device key: every
// attestation has Algorithm AlgNone and no signature, and Sign never fails.
// Events go out unsigned and the server may classify them bound_unattested;
// that is a decision for the server, not an error here.
func NewNoneSigner() Signer { return noneSigner{} }

func (noneSigner) Sign(ctx context.Context, canonical []byte) (Attestation, error) {
	if err := ctx.Err(); err != nil {
		return Attestation{}, err
	}
	return unsigned(canonical), nil
}
