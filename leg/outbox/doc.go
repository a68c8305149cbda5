// Package outbox keeps messages accepted for a remote session on disk until
// the server acknowledges them. Store is a bbolt file in the state directory
// (one fsync per write, so an accepted message survives kill -9); Leg wraps a
// leg.Leg, stores every Send before answering queued, and delivers the
// stored messages in order per target from Run, retrying with backoff under
// the same message id (hence the same event uuid) until the inner leg says
// sent or refuses for good. The same file holds the control API's
// idempotency keys, which package idempotency reads and writes through the
// store's View and Write. It imports leg, message, addressing and internal
// packages (internal/safefile for its file checks), never a leg that speaks
// to a peer, nor the router.
package outbox
