package claude

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// nlMsg prints one netlink message as the kernel does: header, body,
// padding to 4 bytes.
func nlMsg(typ uint16, body []byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(unix.SizeofNlMsghdr+len(body)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, make([]byte, 10)...) // flags, seq, port id
	b = append(b, body...)
	return append(b, make([]byte, -len(b)&3)...)
}

// nlErr is an NLMSG_ERROR message with errno e (negative, as sent) and
// the start of the request it answers.
func nlErr(e int32) []byte {
	body := binary.NativeEndian.AppendUint32(nil, uint32(e))
	return nlMsg(unix.NLMSG_ERROR, append(body, make([]byte, unix.SizeofNlMsghdr)...))
}

// rtAttr prints one attribute, padded.
func rtAttr(typ uint16, data []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(unix.SizeofRtAttr+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	return append(b, make([]byte, -len(b)&3)...)
}

// diagMsg is a struct unix_diag_msg and its attributes.
func diagMsg(family, state uint8, ino uint32, attrs ...[]byte) []byte {
	b := []byte{family, unix.SOCK_STREAM, state, 0}
	b = binary.NativeEndian.AppendUint32(b, ino)
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff) // cookie
	return append(b, bytes.Join(attrs, nil)...)
}

// unixDiagAnswer is the kernel's answer about one socket bound at name.
func unixDiagAnswer(ino uint32, state uint8, name []byte) []byte {
	return nlMsg(unix.SOCK_DIAG_BY_FAMILY, diagMsg(unix.AF_UNIX, state, ino, rtAttr(unixDiagName, name)))
}

func TestParseUnixDiagReadsOneSocketAndRejectsEveryGarbledAnswer(t *testing.T) {
	const ino = 4242
	const path = "/tmp/cc-socks/1.sock"
	listener := unixDiagAnswer(ino, tcpListen, []byte(path+"\x00"))
	withLen := func(b []byte, l uint32) []byte {
		b = bytes.Clone(b)
		binary.NativeEndian.PutUint32(b, l)
		return b
	}
	peer := rtAttr(2, binary.NativeEndian.AppendUint32(nil, 7)) // UNIX_DIAG_PEER
	rqlen := rtAttr(4, make([]byte, 8))                         // UNIX_DIAG_RQLEN
	tests := []struct {
		name      string
		in        []byte
		wantName  string
		listening bool
		wantErr   error  // matched with errors.Is
		errHas    string // else a part of the error's text; "" with wantErr nil: no error
	}{
		{"a listener bound at a file path is read with its NUL", listener, path + "\x00", true, nil, ""},
		{"an abstract name keeps its leading NUL", unixDiagAnswer(ino, tcpListen, []byte("\x00abs")), "\x00abs", true, nil, ""},
		{"a name holding a newline and a forged table line is one name",
			unixDiagAnswer(ino, tcpListen, []byte("\x00x\n0: 0 0 10000 0 0 4242 "+path)), "\x00x\n0: 0 0 10000 0 0 4242 " + path, true, nil, ""},
		{"a connected socket is no listener", unixDiagAnswer(ino, 1, []byte(path+"\x00")), path + "\x00", false, nil, ""},
		{"a socket bound nowhere has no name", nlMsg(unix.SOCK_DIAG_BY_FAMILY, diagMsg(unix.AF_UNIX, tcpListen, ino)), "", true, nil, ""},
		{"the name is found among other attributes",
			nlMsg(unix.SOCK_DIAG_BY_FAMILY, diagMsg(unix.AF_UNIX, tcpListen, ino, peer, rtAttr(unixDiagName, []byte(path+"\x00")), rqlen)), path + "\x00", true, nil, ""},
		{"a last attribute may end unpadded",
			nlMsg(unix.SOCK_DIAG_BY_FAMILY, diagMsg(unix.AF_UNIX, tcpListen, ino, rtAttr(unixDiagName, []byte("/a"))[:6])), "/a", true, nil, ""},
		{"an acknowledgement before the answer is skipped", append(nlErr(0), listener...), path + "\x00", true, nil, ""},
		{"an empty dump is no socket and no error", nlMsg(unix.NLMSG_DONE, make([]byte, 4)), "", false, nil, ""},
		{"no such socket is ENOENT", nlErr(-int32(unix.ENOENT)), "", false, unix.ENOENT, ""},
		{"a denial is its errno", nlErr(-int32(unix.EACCES)), "", false, unix.EACCES, ""},
		{"an invalid request is its errno", nlErr(-int32(unix.EINVAL)), "", false, unix.EINVAL, ""},
		{"a positive errno is garbled", nlErr(5), "", false, nil, "errno 5"},
		{"an errno past the kernel's range is garbled", nlErr(-5000), "", false, nil, "errno -5000"},
		{"an error message without its errno", nlMsg(unix.NLMSG_ERROR, []byte{1, 2}), "", false, nil, "without its errno"},
		{"an empty answer", nil, "", false, nil, "empty answer"},
		{"a truncated netlink header", listener[:10], "", false, nil, "short of a netlink header"},
		{"a message length past the answer", withLen(listener, uint32(len(listener)+1)), "", false, nil, "outside 16.."},
		{"a message length short of its header", withLen(listener, 8), "", false, nil, "outside 16.."},
		{"a message length of 4 GiB", withLen(listener, 0xffffffff), "", false, nil, "outside 16.."},
		{"a message shorter than unix_diag_msg", nlMsg(unix.SOCK_DIAG_BY_FAMILY, diagMsg(unix.AF_UNIX, tcpListen, ino)[:12]), "", false, nil, "short of 16"},
		{"an answer about another socket", unixDiagAnswer(ino+1, tcpListen, []byte(path+"\x00")), "", false, nil, "asked about 4242"},
		{"an answer about an IPv4 socket", nlMsg(unix.SOCK_DIAG_BY_FAMILY, diagMsg(unix.AF_INET, tcpListen, ino)), "", false, nil, "not a Unix one"},
		{"an attribute length past the message",
			nlMsg(unix.SOCK_DIAG_BY_FAMILY, append(diagMsg(unix.AF_UNIX, tcpListen, ino), 200, 0, 0, 0)), "", false, nil, "attribute length 200"},
		{"an attribute length of zero",
			nlMsg(unix.SOCK_DIAG_BY_FAMILY, append(diagMsg(unix.AF_UNIX, tcpListen, ino), 0, 0, 0, 0)), "", false, nil, "attribute length 0"},
		{"an attribute length short of its header",
			nlMsg(unix.SOCK_DIAG_BY_FAMILY, append(diagMsg(unix.AF_UNIX, tcpListen, ino), 3, 0, 0, 0)), "", false, nil, "attribute length 3"},
		{"a truncated attribute header", nlMsg(unix.SOCK_DIAG_BY_FAMILY, append(diagMsg(unix.AF_UNIX, tcpListen, ino), 8, 0)), "", false, nil, "short of an attribute header"},
		{"two names for one socket",
			nlMsg(unix.SOCK_DIAG_BY_FAMILY, diagMsg(unix.AF_UNIX, tcpListen, ino, rtAttr(unixDiagName, []byte("/a")), rtAttr(unixDiagName, []byte("/b")))), "", false, nil, "two names"},
		{"two sockets in one answer", append(bytes.Clone(listener), listener...), "", false, nil, "more than one socket"},
		{"a message of another type", nlMsg(99, nil), "", false, nil, "type 99"},
		{"only a no-op", nlMsg(unix.NLMSG_NOOP, nil), "", false, nil, "no socket and no error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, listening, err := parseUnixDiag(tt.in, ino)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			case tt.errHas != "":
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("error %v, want one saying %q", err, tt.errHas)
				}
				return
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			}
			if string(name) != tt.wantName || listening != tt.listening {
				t.Fatalf("name %q listening %v, want %q %v", name, listening, tt.wantName, tt.listening)
			}
		})
	}
}

func TestBoundAtComparesTheWholeName(t *testing.T) {
	const path = "/tmp/cc-socks/1.sock"
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"a file path with its NUL", path + "\x00", true},
		{"a file path without it", path, true},
		{"a file path with two NULs", path + "\x00\x00", false},
		{"an abstract name spelled like the path", "\x00" + path[1:], false},
		{"an abstract name of the path itself", "\x00" + path, false},
		{"a longer path", path + "x\x00", false},
		{"a path and a forged line", path + "\n0: 0 0 10000 0 0 1 " + path, false},
		{"no name", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := boundAt([]byte(tt.in), path); got != tt.want {
				t.Fatalf("boundAt(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzUnixDiag: no answer panics the parser or makes it read past it, a
// name it returns lies within the answer, and an answer printed as the
// kernel prints it reads back as the name and state it was printed from.
func FuzzUnixDiag(f *testing.F) {
	f.Add(unixDiagAnswer(7, tcpListen, []byte("/tmp/x.sock\x00")), uint32(7), []byte("/tmp/x.sock\x00"), uint8(tcpListen))
	f.Add(append(nlErr(0), nlErr(-2)...), uint32(1), []byte("\x00abs\n0: 0 0 10000 0 0 1 /x"), uint8(1))
	f.Add(nlMsg(unix.SOCK_DIAG_BY_FAMILY, append(diagMsg(unix.AF_UNIX, 10, 3), 200, 0, 0, 0)), uint32(3), []byte{}, uint8(7))
	f.Fuzz(func(t *testing.T, raw []byte, ino uint32, name []byte, state uint8) {
		got, _, err := parseUnixDiag(raw, ino)
		if err == nil && len(got) > 0 {
			start := uintptr(unsafe.Pointer(unsafe.SliceData(got))) - uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
			if start > uintptr(len(raw)) || uintptr(len(got)) > uintptr(len(raw))-start || cap(got) != len(got) {
				t.Fatalf("name %q (cap %d) is not within the answer %q", got, cap(got), raw)
			}
		}
		if len(name) > 0xffff-unix.SizeofRtAttr-unix.SizeofNlMsghdr-unixDiagMsgLen {
			return
		}
		got, listening, err := parseUnixDiag(unixDiagAnswer(ino, state, name), ino)
		if err != nil || !bytes.Equal(got, name) || listening != (state == tcpListen) {
			t.Fatalf("printed %q state %d, read %q listening %v, %v", name, state, got, listening, err)
		}
	})
}

// forgerSocket binds a listening Unix socket under an abstract name that
// prints, in /proc/net/unix, a line of its own: the socket's own inode,
// listening at victim. It returns the socket's fd.
func forgerSocket(t *testing.T, victim string) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	// Only the fields parseNetUnix reads need be right: flags (listening)
	// and inode, then the path after one space.
	name := fmt.Sprintf("\x00f\n0: 0 0 %X 0 0 %d %s", acceptCon, st.Ino, victim)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: name}); err != nil {
		t.Fatalf("bind %q: %v", name, err)
	}
	if err := unix.Listen(fd, 1); err != nil {
		t.Fatal(err)
	}
	return fd
}

// A process that binds a socket whose name forges a line of
// /proc/net/unix does not own the reply socket that line names.
func TestASocketNameForgingATableLineDoesNotMakeItsHolderTheOwner(t *testing.T) {
	victim := filepath.Join(testutil.ShortTempDir(t), "1.sock")
	listenerProcess(t, victim, false) // the victim's socket, held by another process
	forgerSocket(t, victim)
	if owned, _, _, err := scanOwner(victim, os.Getpid()); err != nil || !owned {
		t.Fatalf("the /proc/net/unix scan was not fooled (%v, %v): this test proves nothing", owned, err)
	}
	if owned, err := socketOwnedBy(victim, os.Getpid()); owned || err != nil {
		t.Fatalf("the forger owns the victim's socket: %v, %v", owned, err)
	}
}

func TestSockDiagFindsTheListenerThisProcessHolds(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	path := filepath.Join(dir, "1.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	forgerSocket(t, path) // a forger of its own line, which a scan would also find
	owned, fd, link, err := diagOwner(path, os.Getpid())
	if err != nil || !owned {
		t.Fatalf("our listener not found: %v, %v", owned, err)
	}
	want, err := ln.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	if l, _ := os.Readlink("/proc/self/fd/" + fd); l != link {
		t.Fatalf("fd %s links to %q, not %q", fd, l, link)
	}
	if l, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", want.Fd())); l != link {
		t.Fatalf("the owner found is %s, not the listener %s", link, l)
	}
	if owned, _, _, err := diagOwner(filepath.Join(dir, "2.sock"), os.Getpid()); owned || err != nil {
		t.Fatalf("a path nothing listens at is owned: %v, %v", owned, err)
	}
}

// Where sock_diag is denied, the check is the table scan, not a failure,
// and the process says so once: the operator can allow AF_NETLINK.
func TestTheCheckFallsBackToTheTableWhereSockDiagIsDenied(t *testing.T) {
	openDiagSocket = func() (*diagSocket, error) { return nil, diagErr("socket", unix.EACCES) }
	defer func() { openDiagSocket = openDiag }()
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	weakCheckOnce = sync.Once{}
	path := filepath.Join(testutil.ShortTempDir(t), "1.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if owned, _, _, err := findOwner(path, os.Getpid()); err != nil || !owned {
		t.Fatalf("the fallback did not find our listener: %v, %v", owned, err)
	}
	if _, _, _, err := findOwner(path, os.Getppid()); err != nil {
		t.Fatalf("the fallback failed: %v", err)
	}
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "AF_NETLINK") {
		t.Fatalf("log after two checks that fell back: %q, want one warning naming AF_NETLINK", lines)
	}
}

// A process with more sockets than a check asks about is an error, not a
// scan of them all.
func TestACheckAsksAboutAtMost4096Sockets(t *testing.T) {
	for range maxDiagQueries + 1 {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Skipf("cannot open %d sockets: %v", maxDiagQueries+1, err)
		}
		defer unix.Close(fd)
	}
	_, _, _, err := diagOwner(filepath.Join(testutil.ShortTempDir(t), "none.sock"), os.Getpid())
	if !errors.Is(err, errTooManySockets) {
		t.Fatalf("error %v, want %v", err, errTooManySockets)
	}
}
