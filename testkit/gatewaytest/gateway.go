package gatewaytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
)

// Gateway is a running gateway in a World, with a client on its control
// socket. It is stopped when the test that started it ends.
type Gateway struct {
	*api.Client
	*World
	Name string
	PID  int // the gateway's process: the binary's, or the test's own in process

	logs    *lockedBuf    // the binary's stderr; empty for one in process
	halt    func()        // asks it to stop: SIGTERM, or cancelling serve
	proc    *os.Process   // nil for a gateway in process
	exited  chan struct{} // closed once it has ended
	exitErr error         // how it ended, once exited is closed
	stopped sync.Once
}

// Start runs `gateway serve --name name --log-level debug args...` in w and
// waits until it answers on its control socket.
func Start(tb testing.TB, w *World, name string, args ...string) *Gateway {
	tb.Helper()
	cmd := exec.Command(Bin(tb), append([]string{"serve", "--name", name, "--log-level", "debug"}, args...)...)
	cmd.Env = w.Env()
	return StartCmd(tb, w, name, cmd, startPatience)
}

// StartCmd starts cmd, which serves a gateway named name in w (the binary,
// or a script that builds and execs it), and waits up to patience until
// it answers on w's control socket. What cmd writes is its Logs; it is
// stopped when the test ends.
func StartCmd(tb testing.TB, w *World, name string, cmd *exec.Cmd, patience time.Duration) *Gateway {
	tb.Helper()
	logs := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	g := &Gateway{Client: api.NewUnixClient(w.Socket()), World: w, Name: name, PID: cmd.Process.Pid, logs: logs,
		halt: func() { _ = cmd.Process.Signal(syscall.SIGTERM) }, proc: cmd.Process, exited: make(chan struct{})}
	go func() { g.exitErr = cmd.Wait(); close(g.exited) }()
	tb.Cleanup(func() {
		g.Stop(tb)
		if tb.Failed() {
			tb.Logf("gateway logs:\n%s", logs.String())
		}
	})
	g.waitUp(tb, patience)
	return g
}

// startPatience is how long Start waits for the binary to answer. It is
// longer than federation's join timeout (30 s): a cluster that is still
// electing its leaders on a loaded machine can hold a joining gateway for
// more than 15 s, and the gateway should then fail with its own error, not
// be stopped by the harness mid-join. A gateway that is up returns at once.
const startPatience = 40 * time.Second

// Attach wraps a gateway the test serves in process in w: it waits until
// the gateway answers, and at the test's end calls cancel and waits for
// serve's error on exited (which also says if serve ends on its own).
func Attach(tb testing.TB, w *World, name string, exited <-chan error, cancel func()) *Gateway {
	tb.Helper()
	g := &Gateway{Client: api.NewUnixClient(w.Socket()), World: w, Name: name, PID: os.Getpid(), logs: &lockedBuf{},
		halt: cancel, exited: make(chan struct{})}
	go func() { g.exitErr = <-exited; close(g.exited) }()
	tb.Cleanup(func() { g.Stop(tb) })
	g.waitUp(tb, 10*time.Second)
	return g
}

// waitUp waits until the gateway lists sessions on its socket.
func (g *Gateway) waitUp(tb testing.TB, patience time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(patience)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := g.Sessions(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-g.exited:
			tb.Fatalf("gateway did not start: %v\n%s", g.exitErr, g.Logs())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("gateway not answering: %v\n%s", err, g.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop asks the gateway to stop (SIGTERM for the binary) unless it has
// ended already, and waits for it; the test fails if it does not exit
// cleanly. Later calls do nothing.
func (g *Gateway) Stop(tb testing.TB) {
	g.stopped.Do(func() {
		select {
		case <-g.exited:
		default:
			g.halt()
			select {
			case <-g.exited:
			case <-time.After(15 * time.Second):
				if g.proc == nil {
					<-g.exited
					break
				}
				_ = g.proc.Kill()
				<-g.exited
				tb.Errorf("the gateway did not stop on SIGTERM")
				return
			}
		}
		if g.exitErr != nil {
			tb.Errorf("the gateway exited with %v", g.exitErr)
		}
	})
}

// Kill ends the gateway binary with SIGKILL, leaving whatever it had
// written behind, and waits for it to exit.
func (g *Gateway) Kill(tb testing.TB) {
	tb.Helper()
	if err := g.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	g.stopped.Do(func() { <-g.exited })
}

// Signal sends the gateway binary sig, as a supervisor would.
func (g *Gateway) Signal(sig os.Signal) error {
	if g.proc == nil {
		return errors.New("signals need the gateway binary, not one in process")
	}
	return g.proc.Signal(sig)
}

// Exited is closed once the gateway has ended, and ExitErr is then how.
func (g *Gateway) Exited() <-chan struct{} { return g.exited }

// ExitErr is how the gateway ended (nil for exit 0), once Exited is closed.
func (g *Gateway) ExitErr() error { return g.exitErr }

// Logs is what the gateway binary has written to stderr so far.
func (g *Gateway) Logs() string { return g.logs.String() }

// Run runs a gateway CLI verb in the World and returns its stdout, its
// exit code and an error for anything but a clean exit.
func (g *Gateway) Run(tb testing.TB, args ...string) (string, int, error) {
	tb.Helper()
	return g.RunInput(tb, nil, args...)
}

// RunInput is Run with stdin read from in (nil: no stdin).
func (g *Gateway) RunInput(tb testing.TB, in io.Reader, args ...string) (string, int, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, Bin(tb), args...)
	cmd.Env = g.Env()
	cmd.Stdin = in
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if err != nil {
		return string(out), code, fmt.Errorf("gateway %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), code, nil
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
