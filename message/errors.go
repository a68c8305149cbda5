package message

import "errors"

// ErrNotAccepted marks an error of a leg's Send that took nothing: the
// leg's own store could not keep the message (its disk full, a write
// failed, its cap reached). The router returns it to the caller, a 5xx on the
// API, rather than a failed receipt: nothing went out, and the same send
// may work later.
var ErrNotAccepted = errors.New("not accepted")

// The errors of a leg asked for an ability it lacks (a wrapper such as the
// outbox passes them on from the leg it wraps).
var (
	// ErrNotPrompter means the leg that raised a prompt cannot answer it.
	ErrNotPrompter = errors.New("the leg cannot answer permission prompts")
	// ErrNotControllable means the session's leg takes no control requests.
	ErrNotControllable = errors.New("the session's leg takes no control requests (interrupt, mode, model)")
	// ErrNoLifecycle means no leg creates sessions: the remote leg is off.
	ErrNoLifecycle = errors.New("no leg creates, retitles or archives sessions (remote sessions need `gateway serve` with remote credentials)")
)
