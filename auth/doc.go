// Package auth holds the credentials and the device-signing boundary the
// gateway uses with the claude.ai Sessions API.
//
// Credentials are golang.org/x/oauth2 token sources: a static token, a token
// file re-read when it changes, the OAuth refresh flow with a configurable
// token URL, and an opt-in, read-only reuse of an existing Claude Code
// login's credentials file. Every value holding a secret prints as
// [redacted].
//
// Signing follows Claude Code's event signing
// (docs/protocols/claude-ai-remote.md#canonical-signing). The real device key cannot be
// extracted, so the gateway never pretends to hold it: a Signer turns
// JCS-canonical bytes into an anthropic.ccr.client_event.v1 Attestation,
// either not at all (NewNoneSigner: the server may classify the event
// bound_unattested), with an Ed25519 key on disk for self-hosting and tests
// (NewEd25519FileSigner), or by calling out to a user's program
// (NewExecSigner). It also documents the session-bind message shapes.
// Canonicalisation lives with the client in leg/remote/sessionsapi; this
// package imports nothing else of ours.
package auth
