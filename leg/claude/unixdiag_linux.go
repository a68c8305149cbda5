package claude

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The reply-socket check asks the kernel in binary, through sock_diag, which
// of pid's sockets listens at a path: /proc/net/unix prints bound names byte
// for byte, so a name holding a '\n' can print a line of its own choosing
// there (see parseNetUnix), while a netlink answer is one socket's fields,
// each with its length.

// From linux/sock_diag.h, linux/unix_diag.h and linux/inet_diag.h; the
// ones x/sys/unix has are taken from it.
const (
	udiagShowName    = 0x1        // UDIAG_SHOW_NAME
	unixDiagName     = 0          // UNIX_DIAG_NAME
	tcpListen        = 10         // TCP_LISTEN, the state of a listening Unix socket
	diagNoCookie     = 0xffffffff // INET_DIAG_NOCOOKIE
	unixDiagReqLen   = 24         // struct unix_diag_req
	unixDiagMsgLen   = 16         // struct unix_diag_msg
	nlaTypeMask      = 0x3fff     // an attribute's type without its nested and byte-order flags
	maxDiagQueries   = 4096       // socket fds of one process asked about in one check
	diagReplyBuf     = 8 << 10    // one answer: its header, the message and a name of at most 108 bytes
	diagReplyTimeout = time.Second
)

var (
	errDiagUnavailable = errors.New("the kernel's socket diagnostics cannot be used here")
	errTooManySockets  = fmt.Errorf("the process holds more than %d sockets: its reply socket is not looked for", maxDiagQueries)
)

// diagWorks is set once a probe has shown that the kernel answers Unix
// socket queries: until then a "no such socket" could mean no unix_diag.
var diagWorks atomic.Bool

// weakCheckOnce logs, once per process, that the check fell back to the
// socket table.
var weakCheckOnce sync.Once

// findOwner is the full check: it names the fd of pid holding the socket
// listening at path, asking the kernel through sock_diag, or, where that is
// missing or denied, reading /proc/net/unix (weaker: see parseNetUnix).
func findOwner(path string, pid int) (owned bool, fd, link string, err error) {
	owned, fd, link, err = diagOwner(path, pid)
	if !errors.Is(err, errDiagUnavailable) {
		return owned, fd, link, err
	}
	weakCheckOnce.Do(func() {
		slog.Default().Warn("reply sockets are checked against /proc/net/unix, which a socket's name can forge lines in: allow AF_NETLINK sockets (sock_diag) for the stronger check",
			"err", err)
	})
	return scanOwner(path, pid)
}

// diagOwner asks the kernel, for each socket fd of pid, whether it is the
// socket listening at path.
func diagOwner(path string, pid int) (owned bool, fd, link string, err error) {
	s, err := openDiagSocket()
	if err != nil {
		return false, "", "", err
	}
	defer s.close()
	if !diagWorks.Load() {
		if err := s.probe(); err != nil {
			return false, "", "", err
		}
		diagWorks.Store(true)
	}
	queries := 0
	return socketFDOf(pid, func(ino uint32) (bool, error) {
		if queries++; queries > maxDiagQueries {
			return false, errTooManySockets
		}
		return s.listensAt(ino, path)
	})
}

// boundAt reports whether a socket's name as the kernel gives it is path.
// A file's path comes with the NUL ending it as a C string; an abstract
// name, which starts with a NUL, is its bytes alone.
func boundAt(name []byte, path string) bool {
	if len(name) > 0 && name[0] != 0 && name[len(name)-1] == 0 {
		name = name[:len(name)-1]
	}
	return len(name) > 0 && string(name) == path
}

// diagSocket is one netlink socket, for the queries of one check.
type diagSocket struct {
	fd  int
	seq uint32
	buf []byte
}

// openDiagSocket is openDiag, but where a test denies sock_diag.
var openDiagSocket = openDiag

func openDiag() (*diagSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, diagErr("socket", err)
	}
	// A check never hangs on a kernel that does not answer.
	tv := unix.NsecToTimeval(diagReplyTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, diagErr("setsockopt", err)
	}
	return &diagSocket{fd: fd, buf: make([]byte, diagReplyBuf)}, nil
}

func (s *diagSocket) close() { unix.Close(s.fd) }

// probe dumps the listening Unix sockets in no state at all: the kernel
// answers with an empty dump when it has unix_diag, ENOENT when not.
func (s *diagSocket) probe() error {
	b, err := s.roundTrip(unix.NLM_F_REQUEST|unix.NLM_F_DUMP, 0, 0)
	if err != nil {
		return err
	}
	if _, _, err := parseUnixDiag(b, 0); err != nil {
		return diagErr("probe", err)
	}
	return nil
}

// listensAt asks about the socket with inode ino: whether it listens at
// path.
func (s *diagSocket) listensAt(ino uint32, path string) (bool, error) {
	b, err := s.roundTrip(unix.NLM_F_REQUEST, 1<<tcpListen, ino)
	if err != nil {
		return false, err
	}
	name, listening, err := parseUnixDiag(b, ino)
	if errors.Is(err, unix.ENOENT) {
		return false, nil // not a Unix socket of this network namespace
	}
	if err != nil {
		return false, fmt.Errorf("sock_diag answer about socket %d: %w", ino, err)
	}
	return listening && boundAt(name, path), nil
}

// roundTrip sends one SOCK_DIAG_BY_FAMILY request for AF_UNIX sockets and
// returns the kernel's answer, one datagram.
func (s *diagSocket) roundTrip(flags uint16, states, ino uint32) ([]byte, error) {
	s.seq++
	req := make([]byte, unix.SizeofNlMsghdr+unixDiagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], flags)
	ne.PutUint32(req[8:], s.seq)
	// req[12:16], the port id: the kernel's to fill in.
	r := req[unix.SizeofNlMsghdr:]
	r[0] = unix.AF_UNIX // sdiag_family; sdiag_protocol and pad stay 0
	ne.PutUint32(r[4:], states)
	ne.PutUint32(r[8:], ino)
	ne.PutUint32(r[12:], udiagShowName)
	ne.PutUint32(r[16:], diagNoCookie)
	ne.PutUint32(r[20:], diagNoCookie)
	if err := unix.Sendto(s.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, diagErr("sendto", err)
	}
	for {
		n, from, err := unix.Recvfrom(s.fd, s.buf, unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return nil, fmt.Errorf("sock_diag: no answer within %v", diagReplyTimeout)
		}
		if err != nil {
			return nil, diagErr("recvfrom", err)
		}
		if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
			continue // not from the kernel
		}
		if n > len(s.buf) {
			return nil, fmt.Errorf("sock_diag: an answer of %d bytes, more than one socket's", n)
		}
		b := s.buf[:n]
		if len(b) >= unix.SizeofNlMsghdr && binary.NativeEndian.Uint32(b[8:]) != s.seq {
			continue // the answer to an earlier request
		}
		return b, nil
	}
}

// diagErr marks the errors that mean sock_diag is missing or denied here
// (a kernel without it, a seccomp or LSM policy without AF_NETLINK, a
// sandbox that does not implement it): the check then falls back.
func diagErr(op string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EPROTONOSUPPORT), errors.Is(err, unix.EOPNOTSUPP),
		errors.Is(err, unix.EAFNOSUPPORT), errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("%w: %s: %w", errDiagUnavailable, op, err)
	}
	return fmt.Errorf("sock_diag %s: %w", op, err)
}

// parseUnixDiag reads the kernel's answer to a query about the Unix socket
// with inode wantIno: the socket's bound name (a sub-slice of b; nil when
// it is bound nowhere) and whether it listens. An NLMSG_ERROR answer is
// its errno (ENOENT: no such socket); an empty dump (NLMSG_DONE) is no
// socket and no error. Every length is checked against b: a garbled
// answer is an error, never a read past it.
func parseUnixDiag(b []byte, wantIno uint32) (name []byte, listening bool, err error) {
	ne := binary.NativeEndian
	if len(b) == 0 {
		return nil, false, errors.New("empty answer")
	}
	answered := false
	for len(b) > 0 {
		if len(b) < unix.SizeofNlMsghdr {
			return nil, false, fmt.Errorf("%d bytes left, short of a netlink header", len(b))
		}
		l := ne.Uint32(b[0:])
		if l < unix.SizeofNlMsghdr || uint64(l) > uint64(len(b)) {
			return nil, false, fmt.Errorf("netlink message length %d outside 16..%d", l, len(b))
		}
		typ, body := ne.Uint16(b[4:]), b[unix.SizeofNlMsghdr:l]
		switch typ {
		case unix.NLMSG_NOOP:
		case unix.NLMSG_DONE:
			if answered {
				return name, listening, nil
			}
			return nil, false, nil
		case unix.NLMSG_ERROR:
			if len(body) < 4 {
				return nil, false, errors.New("netlink error message without its errno")
			}
			e := int32(ne.Uint32(body))
			if e > 0 || e < -4095 {
				return nil, false, fmt.Errorf("netlink error message with errno %d", e)
			}
			if e != 0 { // 0 is an acknowledgement
				return nil, false, unix.Errno(-e)
			}
		case unix.SOCK_DIAG_BY_FAMILY:
			if answered {
				return nil, false, errors.New("more than one socket in the answer")
			}
			answered = true
			if name, listening, err = parseUnixDiagMsg(body, wantIno); err != nil {
				return nil, false, err
			}
		default:
			return nil, false, fmt.Errorf("unexpected netlink message type %d", typ)
		}
		// Messages are 4-byte aligned; the last one may end unpadded.
		b = b[min(uint64(l+3)&^3, uint64(len(b))):]
	}
	if !answered {
		return nil, false, errors.New("no socket and no error in the answer")
	}
	return name, listening, nil
}

// parseUnixDiagMsg reads one struct unix_diag_msg and its attributes.
func parseUnixDiagMsg(m []byte, wantIno uint32) (name []byte, listening bool, err error) {
	ne := binary.NativeEndian
	if len(m) < unixDiagMsgLen {
		return nil, false, fmt.Errorf("socket message of %d bytes, short of %d", len(m), unixDiagMsgLen)
	}
	if m[0] != unix.AF_UNIX {
		return nil, false, fmt.Errorf("socket of family %d, not a Unix one", m[0])
	}
	if ino := ne.Uint32(m[4:]); ino != wantIno {
		return nil, false, fmt.Errorf("answer about socket %d, asked about %d", ino, wantIno)
	}
	listening = m[2] == tcpListen
	seen := false
	for a := m[unixDiagMsgLen:]; len(a) > 0; {
		if len(a) < unix.SizeofRtAttr {
			return nil, false, fmt.Errorf("%d bytes left, short of an attribute header", len(a))
		}
		l := int(ne.Uint16(a[0:]))
		if l < unix.SizeofRtAttr || l > len(a) {
			return nil, false, fmt.Errorf("attribute length %d outside 4..%d", l, len(a))
		}
		if ne.Uint16(a[2:])&nlaTypeMask == unixDiagName {
			if seen {
				return nil, false, errors.New("two names for one socket")
			}
			seen = true
			name = a[unix.SizeofRtAttr:l:l]
		}
		a = a[min((l+3)&^3, len(a)):]
	}
	return name, listening, nil
}
