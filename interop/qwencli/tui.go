package qwencli

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// tmuxSession is the one session name on each private tmux server.
const tmuxSession = "qwen"

// startTUI runs the CLI as the only pane of a private tmux server (its own
// socket, so it never touches a user's tmux). env -i gives the pane exactly
// env: the tmux server would otherwise hand it the test process's
// environment.
func (s *Session) startTUI(env, args []string) error {
	if err := s.tmux.Start(s.opts.Cwd, env, s.opts.Bin, args); err != nil {
		return err
	}
	pid, start, err := s.panePIDAndStart()
	if err != nil {
		s.tmux.Kill()
		return err
	}
	s.panePID = pid
	// The launcher is the tmux server's child, not ours: its exit is seen by
	// polling, in the one goroutine this session owns, which ends when the
	// launcher does (it outlives the processes it started).
	go func() {
		defer close(s.done)
		for {
			if now, err := ProcStart(s.panePID); err != nil || now != start || !alive(s.panePID) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return nil
}

// panePIDAndStart reads the pane's process id and start time. env execs the
// launcher, so the pane's process is the launcher itself.
func (s *Session) panePIDAndStart() (int, string, error) {
	pid, err := s.tmux.PanePID()
	if err != nil {
		return 0, "", err
	}
	start, err := ProcStart(pid)
	if err != nil {
		return 0, "", fmt.Errorf("the launcher (pid %d) is already gone: %w", pid, err)
	}
	return pid, start, nil
}

// tuiSubmitTimeout bounds how long TypeTurn waits for the TUI to take a line.
const tuiSubmitTimeout = 30 * time.Second

// TypeTurn types one line into the TUI's input box and submits it, as a
// person would. The TUI binds its inbox before its input box takes keys, and
// keys sent too early are lost (all of them, or only the Enter), so this
// watches the screen: it types once the empty box shows its placeholder,
// types again if the text never shows while the box stays empty, then
// presses Enter until the box is back without the text. It does not wait for
// the turn the text starts.
func (s *Session) TypeTurn(text string) error {
	if strings.TrimSpace(text) == "" || strings.ContainsAny(text, "\r\n") {
		return errors.New("qwencli: TypeTurn takes one line that is not blank")
	}
	probe := strings.TrimSpace(text)
	if len(probe) > 40 {
		probe = probe[:40]
	}
	deadline := time.Now().Add(tuiSubmitTimeout)
	var typed time.Time // when the text was last typed
	for ; !s.inputShows(probe); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("qwencli: the TUI's input box never showed %q", probe)
		}
		if screen, err := s.Screen(); err != nil || !strings.Contains(InputBox(screen), inputPlaceholder) {
			continue // not ready, or busy showing what was typed
		}
		if time.Since(typed) < 2*time.Second {
			continue
		}
		if err := s.tmux.Run("send-keys", "-t", tmuxSession, "-l", text); err != nil {
			return err
		}
		typed = time.Now()
	}
	for {
		if err := s.tmux.Run("send-keys", "-t", tmuxSession, "Enter"); err != nil {
			return err
		}
		for range 10 {
			time.Sleep(100 * time.Millisecond)
			if screen, err := s.Screen(); err == nil && submitted(screen, probe) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("qwencli: the TUI did not submit %q", probe)
		}
	}
}

// submitted reports whether a screen shows probe submitted: the input box is
// back without it, or (while a dialog hides the box) the transcript shows it.
// A screen caught mid-redraw, with neither, proves nothing.
func submitted(screen, probe string) bool {
	box := InputBox(screen)
	if box == "" {
		return strings.Contains(screen, probe)
	}
	return !strings.Contains(box, probe)
}

// inputPlaceholder is what the empty input box shows.
const inputPlaceholder = "Type your message"

// inputShows reports whether the input box holds probe.
func (s *Session) inputShows(probe string) bool {
	screen, err := s.Screen()
	if err != nil {
		return false
	}
	return strings.Contains(InputBox(screen), probe)
}

// InputBox is the text of the TUI's input box on a captured screen: the lines
// between the last two horizontal rules. (Submitted lines above it carry the
// same prompt mark, and the mark changes with the approval mode, so the
// rules are what find it.) It is "" when the screen shows no box.
func InputBox(screen string) string {
	lines := strings.Split(screen, "\n")
	var rules []int
	for i, l := range lines {
		if isRule(l) {
			rules = append(rules, i)
		}
	}
	if len(rules) < 2 {
		return ""
	}
	a, b := rules[len(rules)-2], rules[len(rules)-1]
	return strings.Join(lines[a+1:b], "\n")
}

func isRule(line string) bool {
	line = strings.TrimSpace(line)
	return len([]rune(line)) >= 20 && strings.Trim(line, "─") == ""
}

// Screen is what the TUI shows now (tmux capture-pane).
func (s *Session) Screen() (string, error) {
	return s.tmux.Capture()
}
