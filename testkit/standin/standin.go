package standin

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// env marks the re-run test binary as a stand-in.
const env = "GATEWAY_TESTKIT_STANDIN"

// backlog is what listen(2) is called with again: the kernel caps it at
// somaxconn, as Go's own listen does.
const backlog = 4096

// The stand-in's side: before any test runs, a stand-in takes each socket
// it is sent on its control descriptor (fd 3) with one byte saying what to
// do: listen on it (0), or connect it to the socket path that follows (C).
// It answers "ok", and exits when the control descriptor closes (its test
// is over, or died).
func init() {
	if os.Getenv(env) == "" {
		return
	}
	os.Exit(serve(os.NewFile(3, "control")))
}

func serve(ctl *os.File) int {
	buf := make([]byte, 1+len(unix.RawSockaddrUnix{}.Path))
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(ctl.Fd()), buf, oob, 0)
		if err != nil || n == 0 {
			return 0
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return 2
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			return 2
		}
		if buf[0] == opConnect {
			err = unix.Connect(fds[0], &unix.SockaddrUnix{Name: string(buf[1:n])})
		} else {
			err = unix.Listen(fds[0], backlog)
		}
		unix.Close(fds[0])
		reply := "ok\n"
		if err != nil {
			reply = "error " + err.Error() + "\n"
		}
		if _, err := ctl.Write([]byte(reply)); err != nil {
			return 0
		}
	}
}

// opConnect asks the stand-in to connect a socket; 0 to listen on one.
const opConnect = 'C'

// Process is a running stand-in.
type Process struct {
	PID   int
	ctl   *os.File
	mu    sync.Mutex // one request at a time
	reply *bufio.Reader
}

// Start runs a stand-in until the test ends.
func Start(tb testing.TB) *Process {
	tb.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "standin"), os.NewFile(uintptr(fds[1]), "standin")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		ours.Close()
		tb.Fatalf("starting the stand-in: %v", err)
	}
	tb.Cleanup(func() {
		ours.Close()
		_ = cmd.Wait()
	})
	return &Process{PID: cmd.Process.Pid, ctl: ours, reply: bufio.NewReader(ours)}
}

// Listen makes the stand-in the listener of record of the socket whose
// descriptor sock is (a duplicate of a listening socket of the test's):
// connections made from now on see the stand-in's pid in SO_PEERCRED.
func (p *Process) Listen(sock *os.File) error {
	// Through SyscallConn, not Fd: Fd would make the shared socket
	// blocking, and the test's accept loop with it.
	raw, err := sock.SyscallConn()
	if err != nil {
		return fmt.Errorf("standin: %w", err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = p.ask([]byte{0}, int(fd))
	}); err != nil {
		return fmt.Errorf("standin: %w", err)
	}
	return serr
}

// Dial connects to the Unix socket at path as the stand-in: the socket is
// made here and connected there, so the listener's SO_PEERCRED names the
// stand-in, as it names a real session's process for what the session
// writes.
func (p *Process) Dial(path string) (*net.UnixConn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("standin: %w", err)
	}
	f := os.NewFile(uintptr(fd), "standin-dial")
	defer f.Close()
	if err := p.ask(append([]byte{opConnect}, path...), fd); err != nil {
		return nil, err
	}
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("standin: %w", err)
	}
	return c.(*net.UnixConn), nil
}

// ask sends the stand-in one request with fd and reads its answer.
func (p *Process) ask(req []byte, fd int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := unix.Sendmsg(int(p.ctl.Fd()), req, unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("standin: handing over the socket: %w", err)
	}
	line, err := p.reply.ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("standin: %w", err)
	}
	if line != "ok\n" {
		return fmt.Errorf("standin: %q", line)
	}
	return nil
}
