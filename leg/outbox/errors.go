package outbox

import (
	"errors"
	"fmt"
)

// Errors to match with errors.Is.
var (
	ErrFull     = errors.New("outbox full")
	ErrNotFound = errors.New("no outbox entry with that id")
	ErrExists   = errors.New("message already in the outbox")
	ErrNoID     = errors.New("message has no usable id")
	ErrClosed   = errors.New("outbox closed")
	// ErrDamaged: bbolt found a page it cannot read (it panics on them).
	ErrDamaged = errors.New("the file is damaged")
)

// FullError refuses a message once MaxPending messages wait, or once it
// would take the pending ones past MaxPendingBytes. It matches ErrFull.
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

func (e *FullError) Is(target error) bool { return target == ErrFull }

// FailReason says why an entry ended failed.
type FailReason uint8

const (
	FailRefused FailReason = iota + 1 // the inner leg refused it for good, MaxRefusals times
	FailExpired                       // not acknowledged within MaxAge
	FailGone                          // the stored entry could not be read back
)

var failWire = [...]string{FailRefused: "refused", FailExpired: "expired", FailGone: "unreadable"}

func (r FailReason) String() string {
	if int(r) < len(failWire) && failWire[r] != "" {
		return failWire[r]
	}
	return fmt.Sprintf("fail-reason(%d)", uint8(r))
}

// MarshalText writes the wire spelling.
func (r FailReason) MarshalText() ([]byte, error) {
	if int(r) >= len(failWire) || failWire[r] == "" {
		return nil, fmt.Errorf("outbox: cannot write %v", r)
	}
	return []byte(failWire[r]), nil
}

// UnmarshalText reads the wire spelling.
func (r *FailReason) UnmarshalText(b []byte) error {
	for i, w := range failWire {
		if w != "" && w == string(b) {
			*r = FailReason(i)
			return nil
		}
	}
	return fmt.Errorf("unknown outbox failure %q", b)
}
