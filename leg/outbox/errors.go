package outbox

import (
	"errors"
	"fmt"

	"github.com/sessiongateway/gateway/message"
)

// Errors to match with errors.Is.
var (
	ErrNotFound = errors.New("no outbox entry with that id")
	ErrExists   = errors.New("message already in the outbox")
	ErrNoID     = errors.New("message has no usable id")
	ErrClosed   = errors.New("outbox closed")
	// ErrDamaged: bbolt found a page it cannot read (it panics on them).
	ErrDamaged = errors.New("the file is damaged")
)

// FullError refuses a message once MaxPending messages wait, or once it
// would take the pending ones past MaxPendingBytes. It matches message.ErrOutboxFull.
type FullError struct {
	Pending, Max    int
	Bytes, MaxBytes int64 // what the pending entries take, and the cap
}

func (e *FullError) Error() string {
	why := fmt.Sprintf("%d messages already wait for the server (the cap is %d)", e.Pending, e.Max)
	if e.Pending < e.Max {
		why = fmt.Sprintf("the %d messages waiting for the server take %d KiB, and this one would pass the cap of %d KiB",
			e.Pending, e.Bytes>>10, e.MaxBytes>>10)
	}
	return "outbox full: " + why + "; new ones are refused until some are acknowledged (`gateway outbox` lists them)"
}

func (e *FullError) Is(target error) bool { return target == message.ErrOutboxFull }
