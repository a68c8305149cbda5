// Package auth holds the device-signing boundary for events the gateway posts
// to the claude.ai Sessions API (seed 000, "Event signing"). The real device key
// cannot be extracted, so the gateway never pretends to hold it: a Signer turns
// JCS-canonical bytes into an anthropic.ccr.client_event.v1 Attestation, either
// not at all (NewNoneSigner: the server may classify the event
// bound_unattested), with an Ed25519 key on disk for self-hosting and tests
// (NewEd25519FileSigner), or by calling out to a user's program
// (NewExecSigner). It also documents the session-bind message shapes. It
// imports nothing of ours; canonicalisation lives with the client in
// transport/sessionsapi.
package auth
