package uds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// Default bounds for the client side.
const (
	DefaultDialTimeout  = 5 * time.Second
	DefaultProbeTimeout = 500 * time.Millisecond
	// lingerAfterWrite is how long DialWrite waits for the peer to close
	// after our half-close: long enough for a peer to read a line before
	// we vanish, short enough that a silent peer costs little.
	lingerAfterWrite = 150 * time.Millisecond
	// lingerDrainMax bounds what we read and discard while lingering.
	lingerDrainMax = 64 << 10
)

// DialWrite is Claude Code's "one connection, one write": connect, write
// payload in one call, half-close our side, wait up to 150 ms or until the
// peer closes, then close. ctx bounds the whole exchange; without a deadline
// it gets DefaultDialTimeout. Anything the peer sends back is discarded.
//
// DialWrite writes to whoever listens at path: for a path read from a
// registry or a frame, use DialWriteHeld.
func DialWrite(ctx context.Context, path string, payload []byte) error {
	return dialWrite(ctx, path, nil, payload)
}

// dialWrite is DialWrite; with h, the listener is checked before the write.
func dialWrite(ctx context.Context, path string, h *Holder, payload []byte) error {
	// The default bound is the connection's deadline, not a derived
	// context: that would be a timer and a cancel registration more per
	// message for the same bound.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultDialTimeout)
	}
	c, err := dial(ctx, "write to", path)
	if err != nil {
		return err
	}
	defer c.Close()
	if h != nil {
		if err := CheckHolder(c, path, *h); err != nil {
			return err
		}
	}
	stop := onDone(ctx, func() { _ = c.SetDeadline(longAgo) })
	defer stop()
	if err := c.SetDeadline(deadline); err != nil {
		return fmt.Errorf("uds: write to %s: %w", path, err)
	}

	if _, err := c.Write(payload); err != nil {
		return ioError(ctx, "write to", path, err)
	}
	if err := c.CloseWrite(); err != nil {
		return ioError(ctx, "write to", path, err)
	}
	// The payload is out: what follows is courtesy, and its failures are not
	// the caller's concern, but one. A listener that closes with our bytes
	// still unread resets the connection (the kernel's ECONNRESET on a Unix
	// socket): the write succeeded, the message was not taken.
	_ = c.SetReadDeadline(earliest(deadline, time.Now().Add(lingerAfterWrite)))
	if _, err := io.Copy(io.Discard, io.LimitReader(c, lingerDrainMax)); errors.Is(err, syscall.ECONNRESET) {
		return &opError{op: "write to", path: path, kind: ErrUnread, cause: err}
	}
	return nil
}

// Probe connects to path and closes at once: nil means a listener accepted.
// Failures wrap ErrNoSocket (ENOENT), ErrRefused (ECONNREFUSED: a stale socket
// file, or a file that is not a socket), ErrBusy (EAGAIN: alive, backlog full)
// or ErrTimeout. Without a ctx deadline it gives up after DefaultProbeTimeout.
func Probe(ctx context.Context, path string) error {
	ctx, cancel := withDefaultTimeout(ctx, DefaultProbeTimeout)
	defer cancel()
	c, err := dial(ctx, "probe", path)
	if err != nil {
		return err
	}
	return c.Close()
}

func dial(ctx context.Context, op, path string) (*net.UnixConn, error) {
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	// A Unix connect does not wait (a full backlog is EAGAIN at once), so
	// ctx is asked once, before it, rather than watched by a dialer.
	if err := ctx.Err(); err != nil {
		return nil, classifyDial(ctx, op, path, err)
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, classifyDial(ctx, op, path, err)
	}
	return c, nil
}

func classifyDial(ctx context.Context, op, path string, err error) error {
	var kind error
	switch {
	case errors.Is(err, syscall.ENOENT):
		kind = ErrNoSocket
	case errors.Is(err, syscall.ECONNREFUSED):
		kind = ErrRefused
	case errors.Is(err, syscall.EAGAIN):
		kind = ErrBusy
	case isTimeout(ctx, err):
		kind = ErrTimeout
	default:
		return fmt.Errorf("uds: %s %s: %w", op, path, err)
	}
	return &opError{op: op, path: path, kind: kind, cause: err}
}

func ioError(ctx context.Context, op, path string, err error) error {
	if isTimeout(ctx, err) {
		return &opError{op: op, path: path, kind: ErrTimeout, cause: err}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("uds: %s %s: %w", op, path, ctx.Err())
	}
	return fmt.Errorf("uds: %s %s: %w", op, path, err)
}

// isTimeout: the deadline passed, as opposed to the caller cancelling.
func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
}

func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// PeerCred returns the credentials of the process at the other end of c, as
// the kernel recorded them when that process called connect (or listen, seen
// from the dialing side). The pid is translated into our pid namespace; it is
// 0 when the peer lives in a namespace we cannot see.
func PeerCred(c *net.UnixConn) (Cred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("uds: peer credentials: %w", err)
	}
	var (
		cred Cred
		cerr error
	)
	if err := raw.Control(func(fd uintptr) { cred, cerr = peerCred(int(fd)) }); err != nil {
		return Cred{}, fmt.Errorf("uds: peer credentials: %w", err)
	}
	if cerr != nil {
		return Cred{}, fmt.Errorf("uds: peer credentials: %w", cerr)
	}
	return cred, nil
}
