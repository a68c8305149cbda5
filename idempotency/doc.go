// Package idempotency holds the control API's idempotency keys (an
// Idempotency-Key on POST /v1/messages and the message its first request
// sent) and their durable store: a bucket of a bbolt file another package
// owns (the outbox's, so a gateway upgraded in place finds the keys it
// wrote). It imports message only.
package idempotency
