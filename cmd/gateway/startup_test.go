package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// openPTY opens a pseudo-terminal: what the gateway writes to tty, the
// test reads from pty.
func openPTY(t *testing.T) (pty, tty *os.File) {
	t.Helper()
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	testutil.Need(t, err == nil, "no pseudo-terminals here: %v", err)
	if err := unix.IoctlSetPointerInt(int(pty.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(pty.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pty.Close(); tty.Close() })
	return pty, tty
}

// syncBuf collects a process's output while it runs.
type syncBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *syncBuf) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// serveCmd is `gateway serve --settle 200ms args...` in w with the state
// directory given as a flag (not the World's variable), so it is not the
// default one; env adds variables.
func serveCmd(t *testing.T, w *gatewaytest.World, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(gatewaytest.Bin(t), append([]string{"serve", "--settle", "200ms", "--state-dir", w.StateDir}, args...)...)
	for _, kv := range w.Env() {
		if !strings.HasPrefix(kv, "GATEWAY_STATE_DIR=") && !strings.HasPrefix(kv, "NOTIFY_SOCKET=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// stopCmd sends SIGTERM and waits for the exit, killing it past 15 s.
func stopCmd(t *testing.T, cmd *exec.Cmd, done <-chan error) error {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		return errors.New("did not stop within 15 s")
	}
}

// startCmd starts cmd, stopping it when the test ends; done gets its exit.
func startCmd(t *testing.T, cmd *exec.Cmd) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = stopCmd(t, cmd, done)
		}
	})
	return done
}

func TestServeOnATerminalEndsItsStartWithASummaryAndLogsText(t *testing.T) {
	w := gatewaytest.WorldAt(t, t.TempDir())
	pty, tty := openPTY(t)
	cmd := serveCmd(t, w, nil, "--name", "gw-tty", "--api", "127.0.0.1:0")
	cmd.Stderr = tty
	done := startCmd(t, cmd)
	tty.Close() // the gateway holds its own copy
	var out syncBuf
	go func() { _, _ = io.Copy(&out, pty) }()
	want := []string{`registered as "gw-tty"`, w.Socket(), "http://127.0.0.1:", "gateway sessions --state-dir " + w.StateDir, "gateway send --state-dir " + w.StateDir}
	deadline := time.Now().Add(20 * time.Second)
	for !containsAll(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no summary on the terminal; want %q in:\n%s", want, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "{") {
			t.Errorf("a JSON log line on a terminal: %s", line)
		}
	}
	if !strings.Contains(out.String(), "level=INFO msg=") {
		t.Errorf("no text log line on the terminal:\n%s", out.String())
	}
	if err := stopCmd(t, cmd, done); err != nil {
		t.Fatal(err)
	}
}

// waitAnswers waits until the gateway in w lists sessions on its socket.
func waitAnswers(t *testing.T, w *gatewaytest.World, logs *syncBuf) {
	t.Helper()
	c := api.NewUnixClient(w.Socket())
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := c.Sessions(ctxT(t)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not answering:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func containsAll(s string, subs []string) bool {
	flat := strings.ReplaceAll(s, "\r", "")
	for _, sub := range subs {
		if !strings.Contains(flat, sub) {
			return false
		}
	}
	return true
}

func TestServeWithoutATerminalLogsJSONAndNoSummary(t *testing.T) {
	w := gatewaytest.WorldAt(t, t.TempDir())
	var logs syncBuf
	cmd := serveCmd(t, w, nil, "--name", "gw-pipe")
	cmd.Stderr = &logs
	done := startCmd(t, cmd)
	waitAnswers(t, w, &logs)
	if err := stopCmd(t, cmd, done); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	lines := 0
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		lines++
		if !json.Valid(sc.Bytes()) {
			t.Errorf("not a JSON line: %s", sc.Text())
		}
	}
	if lines == 0 || strings.Contains(logs.String(), "next, in another terminal") || strings.Contains(logs.String(), "gateway sessions") {
		t.Errorf("want JSON lines only and no summary:\n%s", logs.String())
	}
}

// TestServeWithLogFormatJSONOnATerminalPrintsOnlyJSON: --log-format json
// on a terminal is JSON lines only, without the start-up summary.
func TestServeWithLogFormatJSONOnATerminalPrintsOnlyJSON(t *testing.T) {
	w := gatewaytest.WorldAt(t, t.TempDir())
	pty, tty := openPTY(t)
	cmd := serveCmd(t, w, nil, "--name", "gw-json", "--log-format", "json")
	cmd.Stderr = tty
	done := startCmd(t, cmd)
	tty.Close()
	var out syncBuf
	go func() { _, _ = io.Copy(&out, pty) }()
	waitAnswers(t, w, &out)
	if err := stopCmd(t, cmd, done); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second) // the last lines through the terminal
	for !strings.Contains(out.String(), "gateway stopped") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, line := range strings.Split(strings.ReplaceAll(out.String(), "\r", ""), "\n") {
		if line = strings.TrimSpace(line); line != "" && !json.Valid([]byte(line)) {
			t.Errorf("not a JSON line on a terminal under --log-format json: %q", line)
		}
	}
	if strings.Contains(out.String(), "ready") && strings.Contains(out.String(), "gateway sessions") {
		t.Errorf("the summary under --log-format json:\n%s", out.String())
	}
}

// TestAMisspeltVariableGetsADidYouMeanAtStart: a GATEWAY_* variable that
// no setting reads but is near one's is named in a warning at start with
// the one it is near; one far from every setting is not. A remote flag
// without the remote leg is warned of in the same log.
func TestAMisspeltVariableGetsADidYouMeanAtStart(t *testing.T) {
	w := gatewaytest.WorldAt(t, t.TempDir())
	var logs syncBuf
	cmd := serveCmd(t, w, []string{"GATEWAY_SETLE=1s", "GATEWAY_SOMETHING_ELSE_ENTIRELY=1"}, "--name", "gw-typo", "--remote-reply", "assistant")
	cmd.Stderr = &logs
	done := startCmd(t, cmd)
	waitAnswers(t, w, &logs)
	if err := stopCmd(t, cmd, done); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "GATEWAY_SETLE is not a gateway setting: did you mean GATEWAY_SETTLE?") {
		t.Errorf("no did-you-mean for GATEWAY_SETLE:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "GATEWAY_SOMETHING_ELSE_ENTIRELY") {
		t.Errorf("a variable far from every setting was warned of:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "--remote-reply has no effect: the remote leg is off (--legs claude,qwen)") {
		t.Errorf("no warning of --remote-reply:\n%s", logs.String())
	}
}

func TestStartupErrorsAreOneLineBeforeAnyRegistration(t *testing.T) {
	busyPort, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busyPort.Close()
	tests := []struct {
		name string
		busy func(t *testing.T, w *gatewaytest.World)
		args []string
		want string
	}{
		{"the --api port taken", func(*testing.T, *gatewaytest.World) {}, []string{"--api", busyPort.Addr().String()}, "already in use"},
		{"the state directory busy with another gateway", func(t *testing.T, w *gatewaytest.World) {
			if err := os.MkdirAll(w.StateDir, 0o700); err != nil {
				t.Fatal(err)
			}
			unlock, err := safefile.TryLock(filepath.Join(w.StateDir, "gateway.lock"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(unlock)
		}, nil, "another gateway is running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			// Neither leg can register here: were the check after the
			// registration, serve would fail on the legs instead.
			for _, f := range []string{"qwen", "claude-config"} {
				testutilWrite(t, filepath.Join(root, f))
			}
			w := gatewaytest.WorldAt(t, root)
			tt.busy(t, w)
			cmd := serveCmd(t, w, []string{"QWEN_HOME=" + filepath.Join(root, "qwen"), "CLAUDE_CONFIG_DIR=" + filepath.Join(root, "claude-config")}, tt.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitError {
				t.Fatalf("exit %v, want %d: %s", err, exitError, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "gateway: ") || !strings.Contains(last, tt.want) || strings.Contains(last, "{") {
				t.Fatalf("last line %q, want one plain gateway: line saying %q\n%s", last, tt.want, stderr.String())
			}
			if strings.Contains(stderr.String(), "Claude Code") || strings.Contains(stderr.String(), "Qwen Code") {
				t.Fatalf("serve tried the legs before the check:\n%s", stderr.String())
			}
		})
	}
}

func testutilWrite(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestReadyIsSentOnceEveryLegIsRegisteredAndStoppingOnTheDrain(t *testing.T) {
	w := gatewaytest.WorldAt(t, t.TempDir())
	sockPath := filepath.Join(w.Root, "notify")
	sm, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	var logs syncBuf
	cmd := serveCmd(t, w, []string{"NOTIFY_SOCKET=" + sockPath})
	cmd.Stderr = &logs
	done := startCmd(t, cmd)
	read := func() string {
		buf := make([]byte, 256)
		_ = sm.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := sm.Read(buf)
		if err != nil {
			t.Fatalf("nothing on NOTIFY_SOCKET: %v\n%s", err, logs.String())
		}
		return string(buf[:n])
	}
	if got := read(); got != "READY=1" {
		t.Fatalf("first state %q, want READY=1", got)
	}
	// At READY=1 the gateway is registered on both local legs.
	for _, dir := range []string{filepath.Join(w.ConfigDir, "sessions"), filepath.Join(w.QwenHome, "sessions")} {
		if ents, _ := os.ReadDir(dir); len(ents) == 0 {
			t.Errorf("READY=1 before the registration in %s", dir)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if got := read(); got != "STOPPING=1" {
		t.Fatalf("state at SIGTERM %q, want STOPPING=1", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("exit: %v\n%s", err, logs.String())
	}
}

func TestTheSystemdUnitWaitsForReady(t *testing.T) {
	b, err := os.ReadFile("../../deploy/gateway.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nType=notify\n", "\nNotifyAccess=main\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("deploy/gateway.service lacks %q: systemd would not wait for READY=1", strings.TrimSpace(want))
		}
	}
}
