package gatewaytest

import (
	"context"
	"errors"
	"fmt"
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

	logs     *lockedBuf // the binary's stderr; empty for one in process
	stopOnce sync.Once
	halt     func() error
	kill     func() // nil for a gateway in process
}

// Start runs `gateway serve --name name --log-level debug args...` in w and
// waits until it answers on its control socket.
func Start(tb testing.TB, w *World, name string, args ...string) *Gateway {
	tb.Helper()
	logs := &lockedBuf{}
	cmd := exec.Command(Bin(tb), append([]string{"serve", "--name", name, "--log-level", "debug"}, args...)...)
	cmd.Env = w.Env()
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	halt := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				return fmt.Errorf("gateway exited with %v", err)
			}
			return nil
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return errors.New("gateway did not stop on SIGTERM")
		}
	}
	kill := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	g := &Gateway{Client: api.NewUnixClient(w.Socket()), World: w, Name: name, logs: logs, PID: cmd.Process.Pid, halt: halt, kill: kill}
	tb.Cleanup(func() {
		g.Stop(tb)
		if tb.Failed() {
			tb.Logf("gateway logs:\n%s", logs.String())
		}
	})
	g.waitUp(tb, 15*time.Second, exited)
	return g
}

// Attach wraps a gateway the test serves in process in w: it waits until
// the gateway answers, and at the test's end calls stop, which ends the
// gateway and returns what serve returned. exited yields serve's error if
// it ends on its own first.
func Attach(tb testing.TB, w *World, name string, exited <-chan error, stop func() error) *Gateway {
	tb.Helper()
	g := &Gateway{Client: api.NewUnixClient(w.Socket()), World: w, Name: name, PID: os.Getpid(), logs: &lockedBuf{}, halt: stop}
	tb.Cleanup(func() { g.Stop(tb) })
	g.waitUp(tb, 10*time.Second, exited)
	return g
}

// waitUp waits until the gateway lists sessions on its socket.
func (g *Gateway) waitUp(tb testing.TB, patience time.Duration, exited <-chan error) {
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
		case xerr := <-exited:
			g.stopOnce.Do(func() {})
			tb.Fatalf("gateway did not start: %v\n%s", xerr, g.Logs())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("gateway not answering: %v\n%s", err, g.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop ends the gateway (SIGTERM for the binary) and waits for it; the
// test fails if it does not exit cleanly. Later calls do nothing.
func (g *Gateway) Stop(tb testing.TB) {
	g.stopOnce.Do(func() {
		if err := g.halt(); err != nil {
			tb.Errorf("stopping the gateway: %v", err)
		}
	})
}

// Kill ends the gateway binary with SIGKILL, leaving whatever it had
// written behind, and waits for it to exit.
func (g *Gateway) Kill(tb testing.TB) {
	tb.Helper()
	if g.kill == nil {
		tb.Fatal("Kill needs the gateway binary, not one in process")
	}
	g.stopOnce.Do(g.kill)
}

// Logs is what the gateway binary has written to stderr so far.
func (g *Gateway) Logs() string { return g.logs.String() }

// Run runs a gateway CLI verb in the World and returns its stdout, its
// exit code and an error for anything but a clean exit.
func (g *Gateway) Run(tb testing.TB, args ...string) (string, int, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, Bin(tb), args...)
	cmd.Env = g.Env()
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
