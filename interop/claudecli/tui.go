package claudecli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/interop/internal/proc"
)

// tmuxSession is the one session name on each private tmux server.
const tmuxSession = "claude"

// startTUI runs the CLI as the only pane of a private tmux server (its own
// socket in a short temp dir, so it never touches a user's tmux). env -i
// gives the pane exactly env: the tmux server would otherwise hand it the
// test process's environment.
func (s *Session) startTUI(env, args []string) error {
	if _, err := exec.LookPath("tmux"); err != nil {
		return fmt.Errorf("TUI mode needs tmux: %w", err)
	}
	// Short: a Unix socket path must stay under 108 bytes.
	dir, err := os.MkdirTemp("", "cctmux")
	if err != nil {
		return err
	}
	s.tmpDir, s.tmux = dir, proc.Tmux{Socket: filepath.Join(dir, "tmux.sock"), Session: tmuxSession}
	if err := s.tmux.Start(s.opts.Cwd, env, s.opts.Bin, args); err != nil {
		return err
	}
	// env execs the CLI, so the pane's process is the CLI itself.
	s.pid, err = s.tmux.PanePID()
	if err != nil {
		return err
	}
	start, err := ProcStart(s.pid)
	if err != nil {
		return err
	}
	// The pane's process is the tmux server's child, not ours: its exit is
	// seen by polling, in the one goroutine this session owns, which ends
	// when the process does.
	go func() {
		for {
			if now, err := ProcStart(s.pid); err != nil || now != start {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		s.mu.Lock()
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		close(s.done)
	}()
	return nil
}

// tuiSubmitTimeout bounds how long typeTUI waits for the TUI to take a line.
const tuiSubmitTimeout = 30 * time.Second

// typeTUI types text into the TUI's input box and submits it. The TUI binds
// its socket before its input box is ready, and an Enter pressed too early is
// lost while the typed text stays, so this watches the screen: it waits for
// the text to show in the input box, then presses Enter until the box clears.
func (s *Session) typeTUI(text string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("claudecli: nothing to type")
	}
	if err := s.tmux.Run("send-keys", "-t", tmuxSession, "-l", text); err != nil {
		return err
	}
	probe := strings.TrimSpace(strings.SplitN(text, "\n", 2)[0])
	if len(probe) > 40 {
		probe = probe[:40]
	}
	deadline := time.Now().Add(tuiSubmitTimeout)
	for !s.inputShows(probe) {
		if time.Now().After(deadline) {
			return fmt.Errorf("claudecli: the TUI's input box never showed %q", probe)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		if err := s.tmux.Run("send-keys", "-t", tmuxSession, "Enter"); err != nil {
			return err
		}
		for range 10 {
			time.Sleep(100 * time.Millisecond)
			if !s.inputShows(probe) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("claudecli: the TUI did not submit %q", probe)
		}
	}
}

// inputShows reports whether the input box (the last line starting with the
// prompt mark; submitted lines above it start with the same mark) holds probe.
func (s *Session) inputShows(probe string) bool {
	screen, err := s.Screen()
	if err != nil {
		return false
	}
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "❯") {
			return strings.Contains(lines[i], probe)
		}
	}
	return false
}

// Screen is what the TUI shows now (tmux capture-pane).
func (s *Session) Screen() (string, error) {
	if s.opts.Mode != ModeTUI {
		return "", fmt.Errorf("claudecli: Screen needs mode %q", ModeTUI)
	}
	return s.tmux.Capture()
}

// Keys sends tmux key names (e.g. "Enter", "Escape", "2") to the TUI, to
// answer a dialog.
func (s *Session) Keys(keys ...string) error {
	if s.opts.Mode != ModeTUI {
		return fmt.Errorf("claudecli: Keys needs mode %q", ModeTUI)
	}
	return s.tmux.Run(append([]string{"send-keys", "-t", tmuxSession}, keys...)...)
}
