package standin

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// env marks the re-run test binary as a stand-in.
const env = "GATEWAY_TESTKIT_STANDIN"

// backlog is what listen(2) is called with again: the kernel caps it at
// somaxconn, as Go's own listen does.
const backlog = 4096

// The stand-in's side: before any test runs, a stand-in takes each socket
// it is sent on its control descriptor (fd 3), listens on it, answers "ok",
// and exits when the control descriptor closes (its test is over, or died).
func init() {
	if os.Getenv(env) == "" {
		return
	}
	os.Exit(serve(os.NewFile(3, "control")))
}

func serve(ctl *os.File) int {
	buf := make([]byte, 1)
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
		err = unix.Listen(fds[0], backlog)
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

// Process is a running stand-in.
type Process struct {
	PID   int
	ctl   *os.File
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
		serr = unix.Sendmsg(int(p.ctl.Fd()), []byte{0}, unix.UnixRights(int(fd)), nil, 0)
	}); err != nil {
		return fmt.Errorf("standin: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("standin: handing over the socket: %w", serr)
	}
	line, err := p.reply.ReadString('\n')
	if err != nil && err != io.EOF {
		return fmt.Errorf("standin: %w", err)
	}
	if line != "ok\n" {
		return fmt.Errorf("standin: listen: %q", line)
	}
	return nil
}
