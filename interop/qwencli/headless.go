package qwencli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/sessiongateway/gateway/interop/internal/proc"
)

const (
	headlessStderrKeep = 64 << 10 // bytes of stderr kept for failure messages
	headlessMaxLines   = 100_000  // stdout lines kept; later ones are counted
)

// Headless is one CLI run as a host program runs it:
// qwen --input-format stream-json --output-format stream-json, with raw JSON
// lines on stdin and stdout (see interop/FINDINGS-hosted.md).
type Headless struct {
	opts   Options
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *proc.TailBuffer

	writeMu     sync.Mutex
	stdinClosed bool // CloseStdin or Kill was called: an exit is expected

	mu      sync.Mutex
	lines   []json.RawMessage
	dropped int
	changed chan struct{} // closed and replaced on every line and at exit

	done     chan struct{}
	stopOnce sync.Once
	stopErr  error
}

// StartHeadless runs the CLI in stream-json mode with the Options' homes,
// settings and ApprovalMode, and returns at once: the CLI prints nothing
// until it gets a line. t.Cleanup stops it (SIGTERM, then SIGKILL after 20 s).
func StartHeadless(t testing.TB, o Options) *Headless {
	t.Helper()
	h, err := startHeadless(t, o)
	if err != nil {
		t.Fatalf("qwencli: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("qwencli: headless pid %d, stderr:\n%s", h.cmd.Process.Pid, h.stderr.String())
		}
		if err := h.Stop(); err != nil {
			t.Errorf("qwencli: stopping headless pid %d: %v", h.cmd.Process.Pid, err)
		}
	})
	return h
}

func startHeadless(t testing.TB, o Options) (*Headless, error) {
	if o.Bin == "" {
		bin, err := Bin()
		if err != nil {
			return nil, err
		}
		o.Bin = bin
	}
	if o.APIURL == "" {
		return nil, errors.New("Options.APIURL is required (start a fakeopenai server; use its BaseURL)")
	}
	tmp, err := os.MkdirTemp("", "qh")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	for _, d := range []struct {
		dir  *string
		name string
	}{{&o.Cwd, "cwd"}, {&o.QwenHome, "qh"}, {&o.Home, "home"}, {&o.XDGRuntimeDir, "rt"}, {&o.TmpDir, "tmp"}} {
		if *d.dir == "" {
			*d.dir = filepath.Join(tmp, d.name)
		}
		if err := os.MkdirAll(*d.dir, 0o700); err != nil {
			return nil, err
		}
	}
	if err := writeSettings(filepath.Join(o.QwenHome, "settings.json"), o.Settings); err != nil {
		return nil, fmt.Errorf("writing settings.json: %w", err)
	}
	args := []string{"--input-format", "stream-json", "--output-format", "stream-json"}
	if o.ApprovalMode != "" {
		args = append(args, "--approval-mode", o.ApprovalMode)
	}
	cmd := exec.Command(o.Bin, append(args, o.Args...)...)
	h := &Headless{opts: o, cmd: cmd, stderr: &proc.TailBuffer{Max: headlessStderrKeep},
		changed: make(chan struct{}), done: make(chan struct{})}
	cmd.Dir, cmd.Env, cmd.Stderr = o.Cwd, environ(o), h.stderr
	// qwen is a launcher that runs the CLI as a child holding the same
	// stdout: its own process group lets Kill take both.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.Bin, err)
	}
	go func() {
		h.read(stdout)
		cmd.Wait()
		h.mu.Lock()
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()
		close(h.done)
	}()
	return h, nil
}

func (h *Headless) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if b := trimLine(line); len(b) > 0 {
			h.mu.Lock()
			if len(h.lines) < headlessMaxLines {
				h.lines = append(h.lines, b)
			} else {
				h.dropped++
			}
			close(h.changed)
			h.changed = make(chan struct{})
			h.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func trimLine(b []byte) json.RawMessage {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return append(json.RawMessage(nil), b...)
}

// Lines returns every stdout line so far.
func (h *Headless) Lines() []json.RawMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]json.RawMessage(nil), h.lines...)
}

// WaitLine blocks until a stdout line after the first `after` lines matches
// pred, and returns it with its index; it fails when the process exits or ctx
// ends first.
func (h *Headless) WaitLine(ctx context.Context, after int, pred func(json.RawMessage) bool) (json.RawMessage, int, error) {
	seen := after
	for {
		lines, changed := h.since(seen)
		for i, l := range lines {
			if pred(l) {
				return l, seen + i, nil
			}
		}
		seen += len(lines)
		select {
		case <-changed:
		case <-h.done:
			// Look once more: the last lines land before done closes.
			lines, _ := h.since(seen)
			for i, l := range lines {
				if pred(l) {
					return l, seen + i, nil
				}
			}
			return nil, 0, fmt.Errorf("%w: no matching line after %d", ErrExited, seen+len(lines))
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("qwencli: no matching line after %d: %w", seen, context.Cause(ctx))
		}
	}
}

func (h *Headless) since(n int) ([]json.RawMessage, chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n >= len(h.lines) {
		return nil, h.changed
	}
	return h.lines[n:], h.changed
}

// WriteJSON writes v as one stdin line.
func (h *Headless) WriteJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	if _, err := h.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("qwencli: writing to stdin: %w", err)
	}
	return nil
}

// CloseStdin closes stdin, which ends the CLI once its turn is done; an exit
// after it is not an error for Stop.
func (h *Headless) CloseStdin() error {
	h.writeMu.Lock()
	defer h.writeMu.Unlock()
	h.stdinClosed = true
	return h.stdin.Close()
}

// Kill ends the launcher and the CLI with SIGKILL, as a crash or kill -9
// would, and waits for them; the exit is not an error for Stop.
func (h *Headless) Kill() error {
	h.writeMu.Lock()
	h.stdinClosed = true
	h.writeMu.Unlock()
	if err := syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return err
	}
	<-h.done
	return nil
}

// Done is closed when the process has exited.
func (h *Headless) Done() <-chan struct{} { return h.done }

// ExitCode is the exit status once Done is closed, else -1.
func (h *Headless) ExitCode() int {
	select {
	case <-h.done:
		return h.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// QwenHome is the session's QWEN_HOME; Cwd its working directory.
func (h *Headless) QwenHome() string { return h.opts.QwenHome }

// Cwd is the session's working directory.
func (h *Headless) Cwd() string { return h.opts.Cwd }

// Stderr is the tail of the CLI's stderr.
func (h *Headless) Stderr() string { return h.stderr.String() }

// Stop sends SIGTERM and waits, sending SIGKILL after 20 s. Safe to call
// more than once.
func (h *Headless) Stop() error {
	h.stopOnce.Do(func() { h.stopErr = h.stop() })
	return h.stopErr
}

func (h *Headless) stop() error {
	pid := h.cmd.Process.Pid
	select {
	case <-h.done:
		h.writeMu.Lock()
		closed := h.stdinClosed
		h.writeMu.Unlock()
		if closed {
			return nil
		}
		return fmt.Errorf("%w before Stop (exit %d)", ErrExited, h.cmd.ProcessState.ExitCode())
	default:
	}
	return proc.Terminate(pid, h.done, stopTimeout, func() { syscall.Kill(-pid, syscall.SIGKILL) })
}
