package uds

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
)

// Holder is the process a registry record (or a sender's connection) says
// is listening on a socket we are about to write to. Dialing a socket whose
// listener is another process would hand a record's author our secrets: the
// auth line of its target, our own reply token, the message itself.
type Holder struct {
	// PID is the listener's pid as the record gives it, in the record's
	// own pid namespace; 0 accepts any process of ours.
	PID int
	// PidNS is the inode of that pid namespace; 0 when the record names
	// none (or ours): PID is then read as a pid of our namespace.
	PidNS uint64
}

// ErrNotHolder: the socket's listener is not the process its record names,
// or not ours. Nothing was written to it.
var ErrNotHolder = errors.New("socket held by another process")

// HolderError says whose socket it is instead. It matches ErrNotHolder.
type HolderError struct {
	Path string
	Want Holder
	Got  Cred // the listener, as the kernel recorded it at listen(2)
	Why  string
}

func (e *HolderError) Error() string {
	return fmt.Sprintf("uds: %s: %v: %s", e.Path, ErrNotHolder, e.Why)
}

func (e *HolderError) Unwrap() error { return ErrNotHolder }

// ourPidNS is our own pid namespace, 0 where it cannot be read.
var ourPidNS = sync.OnceValue(func() uint64 {
	ns, err := PidNamespace(os.Getpid())
	if err != nil {
		return 0
	}
	return ns
})

// ourUID is our effective uid, read once (a system call each time
// otherwise, on every send): the gateway never changes it.
var ourUID = sync.OnceValue(os.Geteuid)

// CheckHolder reads the listener's credentials off a connected socket
// (SO_PEERCRED: the process that called listen) and checks them against h:
// the listener must run as our effective uid, and be h.PID. A record of
// another pid namespace names a pid we may not see: when the kernel shows
// us the listener (pid != 0) it must live in that namespace under that pid;
// when it hides it (a sibling or parent namespace), the uid is all there is
// to check.
func CheckHolder(c *net.UnixConn, path string, h Holder) error {
	cred, err := PeerCred(c)
	if err != nil {
		return fmt.Errorf("uds: %s: listener credentials: %w", path, err)
	}
	fail := func(format string, args ...any) error {
		return &HolderError{Path: path, Want: h, Got: cred, Why: fmt.Sprintf(format, args...)}
	}
	if uid := ourUID(); cred.UID != uid {
		return fail("the listener runs as uid %d, we are %d", cred.UID, uid)
	}
	if h.PID == 0 {
		return nil
	}
	ours := h.PidNS == 0 || h.PidNS == ourPidNS()
	switch {
	case ours && cred.PID == h.PID:
		return nil
	case ours:
		return fail("the listener is pid %d, the record names pid %d", cred.PID, h.PID)
	case cred.PID == 0:
		return nil // another namespace the kernel does not show us
	}
	ns, err := PidNamespace(cred.PID)
	if err != nil || ns != h.PidNS {
		return fail("the listener is pid %d of pid namespace %d, the record names namespace %d", cred.PID, ns, h.PidNS)
	}
	inner, err := InnermostPID(cred.PID)
	if err != nil || inner != h.PID {
		return fail("the listener is pid %d in its namespace, the record names pid %d", inner, h.PID)
	}
	return nil
}

// DialWriteHeld is DialWrite to a socket that h must be listening on: the
// listener's credentials are checked once connected and before a byte is
// written; a mismatch is a *HolderError and the connection is closed with
// nothing sent.
func DialWriteHeld(ctx context.Context, path string, h Holder, payload []byte) error {
	return dialWrite(ctx, path, &h, payload)
}

// ProbeHeld is Probe that also checks, once connected, that h is the
// listener (see CheckHolder). A full backlog (ErrBusy) proves the socket
// alive but not whose it is; a write to it is checked again.
func ProbeHeld(ctx context.Context, path string, h Holder) error {
	ctx, cancel := withDefaultTimeout(ctx, DefaultProbeTimeout)
	defer cancel()
	c, err := dial(ctx, "probe", path)
	if err != nil {
		return err
	}
	defer c.Close()
	return CheckHolder(c, path, h)
}

// File returns a duplicate of the listening socket's descriptor, for the
// caller to close. Another process that calls listen(2) on it becomes the
// listener the kernel names to whoever connects from then on (what test
// stand-ins for a session's process do); accepting stays with us.
func (l *Listener) File() (*os.File, error) { return l.ln.File() }
