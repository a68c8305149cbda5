package claudecli

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/interop/internal/proc"
)

// Version is the Claude Code release this harness was written against.
const Version = "2.1.332"

// DummyAPIKey is the API key every session gets. The fake API ignores it;
// the CLI only checks its shape and that its last 20 characters are approved
// in .claude.json.
const DummyAPIKey = "sk-ant-api03-gateway-interop-dummy-key-not-a-secret-0000000000000000-AAAAAAAA"

// Session modes.
const (
	ModeStreamJSON = "stream-json" // claude -p --input-format stream-json --output-format stream-json --verbose
	ModeTUI        = "tui"         // the interactive UI, under a private tmux server
)

const (
	defaultStartTimeout = 60 * time.Second
	stopTimeout         = 20 * time.Second
	stderrKeep          = 64 << 10 // bytes of stderr kept for failure messages
	maxEvents           = 100_000  // events kept; later ones are counted, not stored
)

// ErrNoBinary says the CLI is not installed where the harness looks.
var ErrNoBinary = errors.New("claude CLI not found (run .ci/install-interop.sh, or set GATEWAY_CLAUDE_BIN)")

// Bin finds the CLI: $GATEWAY_CLAUDE_BIN, else
// ${GATEWAY_INTEROP_CACHE:-~/.cache/gateway-interop}/claude/node_modules/.bin/claude,
// the path .ci/install-interop.sh installs to. A missing binary is an error,
// never a reason to skip: callers decide whether interop runs at all.
func Bin() (string, error) {
	return proc.Bin(ErrNoBinary, "GATEWAY_CLAUDE_BIN", "claude", "node_modules", ".bin", "claude")
}

// CheckVersion runs bin --version and reports an error unless it is Version.
func CheckVersion(ctx context.Context, bin string) error {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", bin, err)
	}
	if got := strings.Fields(string(out)); len(got) == 0 || got[0] != Version {
		return fmt.Errorf("%s --version printed %q, want %s", bin, strings.TrimSpace(string(out)), Version)
	}
	return nil
}

// Options says how to run one session. Only APIURL is required.
type Options struct {
	Bin    string // default: Bin()
	APIURL string // ANTHROPIC_BASE_URL, the loopback fake
	Name   string // --name; empty lets the CLI derive one from the cwd
	Cwd    string // working directory; default a fresh temp dir
	Mode   string // ModeStreamJSON (default) or ModeTUI

	// Home is HOME; default a fresh temp dir. Sessions that must see each
	// other (and the gateway) share one registry: give them the same Home,
	// or the same ConfigDir.
	Home string
	// ConfigDir, when set, is CLAUDE_CONFIG_DIR: the CLI then keeps its
	// registry in ConfigDir/sessions and its config in ConfigDir/.claude.json
	// instead of under Home.
	ConfigDir string
	// XDGRuntimeDir, when set, is XDG_RUNTIME_DIR (created 0700): the socket
	// is then $XDG_RUNTIME_DIR/cc-socks/<pid>.sock instead of
	// /tmp/cc-socks/<pid>.sock (unless the path would pass 103 bytes).
	XDGRuntimeDir string

	// Settings, when set, is written as the user settings file,
	// settings.json in the config dir (ConfigDir, else Home/.claude), mode
	// 0600, before the CLI starts: e.g. {"hooks":{...}} (see
	// interop/FINDINGS-hooks.md).
	Settings []byte

	// Confirm, in the TUI, is the text of a dialog shown before the
	// session binds that Enter confirms (its first choice selected), as
	// "I am using this for local development" for development channels.
	Confirm string

	Env  []string // more environment, KEY=VALUE, applied last
	Args []string // more CLI arguments, e.g. --permission-mode

	StartTimeout time.Duration // for the socket to be bound; default 60s
}

// Session is one running CLI.
type Session struct {
	opts        Options
	pid         int
	procStart   string
	sock        string
	sessionID   string
	name        string
	registryDir string

	cmd    *exec.Cmd // stream-json mode only
	stdin  io.WriteCloser
	stderr *proc.TailBuffer
	tmux   proc.Tmux // TUI mode: the private tmux server
	tmpDir string    // TUI mode: directory holding the tmux socket

	writeMu     sync.Mutex // one writer on stdin at a time
	reqSeq      int        // control_request ids, under writeMu
	stdinClosed bool       // CloseStdin or Kill was called: an exit is expected; under writeMu

	mu      sync.Mutex
	events  []Event
	dropped int           // events past maxEvents, not stored
	changed chan struct{} // closed and replaced on every event and at exit

	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done closes

	stopOnce sync.Once
	stopErr  error
}

// Start runs a session and returns once its peer socket is bound and its
// registry entry and key file are written; t.Cleanup stops it (SIGTERM, then
// SIGKILL after 20 s). A session that cannot start fails the test.
func Start(t testing.TB, o Options) *Session {
	t.Helper()
	s, err := start(t, o)
	if err != nil {
		t.Fatalf("claudecli: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("claudecli: pid %d, last output:\n%s", s.pid, s.diagnostics())
		}
		if err := s.Stop(); err != nil {
			t.Errorf("claudecli: stopping pid %d: %v", s.pid, err)
		}
	})
	return s
}

func start(t testing.TB, o Options) (*Session, error) {
	if o.Bin == "" {
		bin, err := Bin()
		if err != nil {
			return nil, err
		}
		o.Bin = bin
	}
	if o.APIURL == "" {
		return nil, errors.New("Options.APIURL is required (start a fakeanthropic server)")
	}
	if o.Mode == "" {
		o.Mode = ModeStreamJSON
	}
	if o.Mode != ModeStreamJSON && o.Mode != ModeTUI {
		return nil, fmt.Errorf("unknown mode %q (want %q or %q)", o.Mode, ModeStreamJSON, ModeTUI)
	}
	if o.Home == "" {
		o.Home = t.TempDir()
	}
	if o.Cwd == "" {
		o.Cwd = t.TempDir()
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = defaultStartTimeout
	}
	if o.XDGRuntimeDir != "" {
		if err := os.MkdirAll(o.XDGRuntimeDir, 0o700); err != nil {
			return nil, err
		}
	}
	configDir := filepath.Join(o.Home, ".claude")
	configFile := filepath.Join(o.Home, ".claude.json")
	if o.ConfigDir != "" {
		configDir, configFile = o.ConfigDir, filepath.Join(o.ConfigDir, ".claude.json")
	}
	if err := preseed(configFile, o.Cwd); err != nil {
		return nil, fmt.Errorf("pre-seeding %s: %w", configFile, err)
	}
	if o.Settings != nil {
		if err := writeSettings(configDir, o.Settings); err != nil {
			return nil, err
		}
	}

	s := &Session{
		opts:        o,
		registryDir: filepath.Join(configDir, "sessions"),
		stderr:      &proc.TailBuffer{Max: stderrKeep},
		changed:     make(chan struct{}),
		done:        make(chan struct{}),
	}
	args := o.Args
	if o.Name != "" {
		args = append([]string{"--name", o.Name}, args...)
	}
	var err error
	if o.Mode == ModeTUI {
		err = s.startTUI(environ(o), args)
	} else {
		err = s.startStreamJSON(environ(o), args)
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout)
	defer cancel()
	if err := s.waitBound(ctx); err != nil {
		diag := s.diagnostics()
		s.Stop()
		return nil, fmt.Errorf("pid %d did not bind its peer socket: %w\nlast output:\n%s", s.pid, err, diag)
	}
	return s, nil
}

// environ is the child's whole environment: nothing is inherited but PATH,
// so a test run from inside a Claude Code session does not pass on its
// CLAUDE_CODE_* variables.
func environ(o Options) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + o.Home,
		"ANTHROPIC_API_KEY=" + DummyAPIKey,
		"ANTHROPIC_BASE_URL=" + o.APIURL,
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	if o.ConfigDir != "" {
		env = append(env, "CLAUDE_CONFIG_DIR="+o.ConfigDir)
	}
	if o.XDGRuntimeDir != "" {
		env = append(env, "XDG_RUNTIME_DIR="+o.XDGRuntimeDir)
	}
	if o.Mode == ModeTUI {
		env = append(env, "TERM=xterm-256color", "LANG=C.UTF-8")
	}
	return append(env, o.Env...)
}

// preseedMu serialises the read-modify-write of a shared .claude.json
// between sessions started by one test binary.
var preseedMu sync.Mutex

// preseed merges into the CLI's config what keeps it from asking anything:
// onboarding done, the dummy key approved, cwd trusted. Other keys (the CLI
// writes its own) are kept, so sessions can share a HOME.
func preseed(path, cwd string) error {
	preseedMu.Lock()
	defer preseedMu.Unlock()
	cfg := map[string]any{}
	switch b, err := os.ReadFile(path); {
	case err == nil:
		if err := json.Unmarshal(b, &cfg); err != nil {
			return err
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	cfg["hasCompletedOnboarding"] = true
	suffix := DummyAPIKey[len(DummyAPIKey)-20:]
	responses, _ := cfg["customApiKeyResponses"].(map[string]any)
	if responses == nil {
		responses = map[string]any{"rejected": []any{}}
	}
	approved, _ := responses["approved"].([]any)
	if !containsString(approved, suffix) {
		approved = append(approved, suffix)
	}
	responses["approved"] = approved
	cfg["customApiKeyResponses"] = responses
	projects, _ := cfg["projects"].(map[string]any)
	if projects == nil {
		projects = map[string]any{}
	}
	project, _ := projects[cwd].(map[string]any)
	if project == nil {
		project = map[string]any{}
	}
	project["hasTrustDialogAccepted"] = true
	projects[cwd] = project
	cfg["projects"] = projects

	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".claudecli-tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeSettings writes b as dir/settings.json, refusing anything that is not
// one JSON object, since the CLI would skip a broken file without a word.
func writeSettings(dir string, b []byte) error {
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("Options.Settings is not a JSON object: %w", err)
	}
	if err := safefile.EnsureDir(dir); err != nil {
		return err
	}
	return safefile.WriteAtomic(filepath.Join(dir, "settings.json"), b)
}

func containsString(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *Session) startStreamJSON(env, args []string) error {
	argv := append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}, args...)
	cmd := exec.Command(s.opts.Bin, argv...)
	cmd.Dir, cmd.Env, cmd.Stderr = s.opts.Cwd, env, s.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.opts.Bin, err)
	}
	s.cmd, s.stdin, s.pid = cmd, stdin, cmd.Process.Pid
	// The one goroutine a session owns: it reads stdout to EOF, reaps the
	// process, and closes done. Stop waits for it.
	go func() {
		s.readEvents(stdout)
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		close(s.done)
	}()
	return nil
}

func (s *Session) readEvents(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			s.addEvent(parseEvent(line))
		}
		if err != nil {
			return
		}
	}
}

func (s *Session) addEvent(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) >= maxEvents {
		s.dropped++ // keep the oldest: tests wait on what happened first
		return
	}
	s.events = append(s.events, ev)
	close(s.changed)
	s.changed = make(chan struct{})
}

// PID is the CLI's process id, the one in its socket name and registry entry.
func (s *Session) PID() int { return s.pid }

// SocketPath is the peer socket, from the registry entry.
func (s *Session) SocketPath() string { return s.sock }

// SessionID is the conversation id from the registry entry.
func (s *Session) SessionID() string { return s.sessionID }

// Name is the session's peer name as it registered it.
func (s *Session) Name() string { return s.name }

// Ref is the short ref ListAgents prints after the name (see Ref).
func (s *Session) Ref() string { return Ref(s.sock) }

// Home is the session's HOME.
func (s *Session) Home() string { return s.opts.Home }

// Cwd is the session's working directory.
func (s *Session) Cwd() string { return s.opts.Cwd }

// RegistryDir is where the session wrote its entry and key file:
// $CLAUDE_CONFIG_DIR/sessions when ConfigDir is set, else HOME/.claude/sessions.
func (s *Session) RegistryDir() string { return s.registryDir }

// Stderr is the tail of the CLI's stderr (stream-json mode only).
func (s *Session) Stderr() string { return s.stderr.String() }

// diagnostics is what to show when something went wrong: the stderr tail,
// or the screen of a TUI.
func (s *Session) diagnostics() string {
	if s.opts.Mode == ModeTUI {
		screen, err := s.Screen()
		if err != nil {
			return err.Error()
		}
		return screen
	}
	return s.Stderr()
}

// Done is closed when the process has exited.
func (s *Session) Done() <-chan struct{} { return s.done }

// Stop sends SIGTERM and waits for the process to exit, sending SIGKILL if
// it has not after 20 s. It is safe to call more than once. Exiting on the
// SIGTERM (by the signal or with status 0 or 143) is not an error.
func (s *Session) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Session) stop() error {
	defer func() {
		if s.tmpDir != "" {
			s.tmux.Kill()
			os.RemoveAll(s.tmpDir)
		}
	}()
	if s.pid == 0 {
		return nil
	}
	select {
	case <-s.done:
		if s.closedStdin() {
			return nil // it was told to end, and did
		}
		return fmt.Errorf("exited before Stop: %v", s.exitErr())
	default:
	}
	if err := proc.Terminate(s.pid, s.done, stopTimeout, func() { syscall.Kill(s.pid, syscall.SIGKILL) }); err != nil {
		return err
	}
	return s.termErr()
}

func (s *Session) exitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitErr
}

// termErr judges the exit that followed our SIGTERM.
func (s *Session) termErr() error {
	err := s.exitErr()
	var ee *exec.ExitError
	if err == nil || !errors.As(err, &ee) {
		return err
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() && ws.Signal() == syscall.SIGTERM || ws.Exited() && ws.ExitStatus() == 143 {
			return nil
		}
	}
	return err
}

// Prepare does for a one-shot command (claude --bg, claude agents) what
// Start does for a session: fills Home and Cwd, pre-seeds the config so the
// CLI asks nothing, and returns the environment to run it with.
func Prepare(t testing.TB, o Options) (Options, []string, error) {
	if o.APIURL == "" {
		return o, nil, errors.New("Options.APIURL is required (start a fakeanthropic server)")
	}
	if o.Home == "" {
		o.Home = t.TempDir()
	}
	if o.Cwd == "" {
		o.Cwd = t.TempDir()
	}
	configFile := filepath.Join(o.Home, ".claude.json")
	if o.ConfigDir != "" {
		configFile = filepath.Join(o.ConfigDir, ".claude.json")
	}
	if err := preseed(configFile, o.Cwd); err != nil {
		return o, nil, fmt.Errorf("pre-seeding %s: %w", configFile, err)
	}
	return o, environ(o), nil
}
