package proc

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Tmux is a private tmux server, reached by its own socket so it never
// touches a user's tmux, running one session that has one pane.
type Tmux struct {
	Socket  string // keep it short: a Unix socket path must stay under 104 bytes
	Session string
}

// Start runs bin with args as the only pane of a new server, in dir, 200x50.
// env -i gives the pane exactly env: the tmux server would otherwise hand it
// the test process's environment.
func (t Tmux) Start(dir string, env []string, bin string, args []string) error {
	envBin, err := exec.LookPath("env")
	if err != nil {
		return err
	}
	argv := []string{"-S", t.Socket, "new-session", "-d", "-s", t.Session, "-x", "200", "-y", "50", "-c", dir, "--", envBin, "-i"}
	argv = append(argv, env...)
	argv = append(argv, bin)
	argv = append(argv, args...)
	if out, err := exec.Command("tmux", argv...).CombinedOutput(); err != nil {
		return fmt.Errorf("tmux new-session: %w: %s", err, out)
	}
	return nil
}

// PanePID is the pane's process id. env execs bin, so that is bin itself.
func (t Tmux) PanePID() (int, error) {
	out, err := exec.Command("tmux", "-S", t.Socket, "display-message", "-p", "-t", t.Session, "#{pane_pid}").Output()
	if err != nil {
		return 0, fmt.Errorf("tmux display-message: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("tmux pane pid %q: %w", out, err)
	}
	return pid, nil
}

// Run runs one tmux command on the server, e.g. send-keys.
func (t Tmux) Run(args ...string) error {
	out, err := exec.Command("tmux", append([]string{"-S", t.Socket}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tmux %s: %w: %s", args[0], err, out)
	}
	return nil
}

// Capture is what the pane shows now (tmux capture-pane).
func (t Tmux) Capture() (string, error) {
	out, err := exec.Command("tmux", "-S", t.Socket, "capture-pane", "-p", "-t", t.Session).Output()
	if err != nil {
		return "", fmt.Errorf("tmux capture-pane: %w", err)
	}
	return string(out), nil
}

// Kill stops the server and its pane; a server already gone is no error
// worth reporting.
func (t Tmux) Kill() { exec.Command("tmux", "-S", t.Socket, "kill-server").Run() }
