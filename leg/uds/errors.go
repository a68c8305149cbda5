package uds

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers match them with errors.Is; the returned errors wrap
// them with the operation and path, and keep the system cause where there is one.
var (
	// ErrLineTooLong: a line exceeded Limits.MaxLine; the connection is closed.
	ErrLineTooLong = errors.New("line too long")
	// ErrTimeout: a line, connect or write did not complete in time.
	ErrTimeout = errors.New("timed out")
	// ErrInUse: a live listener owns the socket path.
	ErrInUse = errors.New("socket in use by a live listener")
	// ErrNoSocket: nothing exists at the socket path (ENOENT).
	ErrNoSocket = errors.New("no socket at path")
	// ErrRefused: the socket file exists but nobody listens on it (ECONNREFUSED).
	ErrRefused = errors.New("connection refused")
	// ErrBusy: the listener is alive but its accept backlog is full (EAGAIN).
	ErrBusy = errors.New("listener backlog full")
	// ErrUnread: the listener closed the connection with what we wrote
	// unread (over its caps, or it refused our token): not delivered.
	ErrUnread = errors.New("the listener closed the connection without reading it")
	// ErrNotSocket: the path exists and is something other than a socket.
	ErrNotSocket = errors.New("not a socket")
	// ErrNoProcess: no process has that pid (or it is not visible to us).
	ErrNoProcess = errors.New("no such process")
	// ErrUnsupported: not implemented on this platform (process identity is
	// Linux only). It matches errors.ErrUnsupported too.
	ErrUnsupported = fmt.Errorf("uds: %w on this platform", errors.ErrUnsupported)
	// ErrNoMachineID: no machine-id file exists. Registry records carry the
	// machine id (pidDomain) and peers compare it with theirs, so a gateway
	// in a container must see the host's.
	ErrNoMachineID = errors.New("no machine id: in a container, mount the host's read-only " +
		"(podman/docker run -v /etc/machine-id:/etc/machine-id:ro; compose's local profile has that volume)")
)

// MaxPathLen is the longest socket path the kernel takes: sun_path holds 108
// bytes and Go needs one of them for the terminating NUL.
const MaxPathLen = 107

// PathTooLongError reports a socket path the kernel cannot bind or connect to.
type PathTooLongError struct{ Path string }

func (e *PathTooLongError) Error() string {
	return fmt.Sprintf("uds: socket path is %d bytes, over the %d-byte limit: %s", len(e.Path), MaxPathLen, e.Path)
}

// opError carries a classified failure plus its system cause, so that
// errors.Is finds both (ErrRefused and syscall.ECONNREFUSED) while the message
// names each once.
type opError struct {
	op, path string
	kind     error
	cause    error
}

func (e *opError) Error() string { return "uds: " + e.op + " " + e.path + ": " + e.kind.Error() }

func (e *opError) Unwrap() []error { return []error{e.kind, e.cause} }

func checkSocketPath(path string) error {
	switch {
	case path == "":
		return errors.New("uds: empty socket path")
	case path[0] == '@':
		// Go maps a leading '@' to the abstract namespace, which has no file,
		// no permissions and no owner to check.
		return fmt.Errorf("uds: abstract socket %q not supported", path)
	case len(path) > MaxPathLen:
		return &PathTooLongError{Path: path}
	}
	return nil
}
