package qwencli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/interop/internal/proc"
)

// Version is the Qwen Code release this harness was written against;
// SDKVersion the @qwen-code/sdk release installed beside it.
const (
	Version    = "0.24.4"
	SDKVersion = "0.1.14"
)

// DummyAPIKey is the OpenAI API key every session gets; the fake ignores it.
const DummyAPIKey = "dummy"

// Approval modes (--approval-mode). ModeDefault puts a session in the
// prompting review class; ModeAuto (what the CLI picks with no flag) and
// ModeYolo in the bypass class. Scripted tool calls run without a prompt only
// under ModeYolo.
const (
	ModeDefault = "default"
	ModeAuto    = "auto"
	ModeYolo    = "yolo"
)

const (
	defaultStartTimeout = 60 * time.Second
	stopTimeout         = 20 * time.Second
)

var (
	// ErrNoBinary says the CLI is not installed where the harness looks.
	ErrNoBinary = errors.New("qwen CLI not found (run .ci/install-interop.sh, or set GATEWAY_QWEN_BIN)")
	// ErrExited says the session's process ended when it should not have.
	ErrExited = errors.New("qwencli: the session exited")
)

// CacheDir is where .ci/install-interop.sh installs Qwen Code and its SDK:
// ${GATEWAY_INTEROP_CACHE:-~/.cache/gateway-interop}/qwen.
func CacheDir() (string, error) {
	cache, err := proc.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "qwen"), nil
}

// Bin finds the CLI: $GATEWAY_QWEN_BIN, else CacheDir()/node_modules/.bin/qwen.
// A missing binary is an error, never a reason to skip: callers decide
// whether interop runs at all.
func Bin() (string, error) {
	return proc.Bin(ErrNoBinary, "GATEWAY_QWEN_BIN", "qwen", "node_modules", ".bin", "qwen")
}

// CheckVersion runs bin --version and reports an error unless it is Version.
func CheckVersion(ctx context.Context, bin string) error {
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w", bin, err)
	}
	if got := strings.TrimSpace(string(out)); got != Version {
		return fmt.Errorf("%s --version printed %q, want %s", bin, got, Version)
	}
	return nil
}

// Options says how to run one TUI session. Only APIURL is required.
type Options struct {
	Bin    string // default: Bin()
	APIURL string // OPENAI_BASE_URL, the fake's base URL ending in /v1
	// Cwd is the working directory, default a fresh temp dir. The session's
	// name is derived from its base name: "<base>-<2 hex>".
	Cwd string
	// ApprovalMode, when set, is passed as --approval-mode (ModeDefault,
	// ModeAuto, ModeYolo, or any other the CLI takes).
	ApprovalMode string

	// QwenHome is QWEN_HOME, holding settings.json and the sessions
	// registry; default a fresh temp dir. Sessions that must see each other
	// (and the gateway, and SDK endpoints) share one.
	QwenHome string
	// Home is HOME; default a fresh temp dir.
	Home string
	// XDGRuntimeDir is XDG_RUNTIME_DIR (created 0700), where the inbox binds
	// as qwen-socks/<pid>.sock; default a fresh short temp dir, so the path
	// stays within the 103 bytes after which the CLI looks elsewhere.
	XDGRuntimeDir string
	// TmpDir is TMPDIR; default a fresh temp dir.
	TmpDir string
	// Settings is merged over the harness's settings.json (top-level keys
	// replace), e.g. {"agents": {"crossSessionInbound": "hold"}}. Sessions
	// sharing a QwenHome share the file.
	Settings map[string]any

	Env  []string // more environment, KEY=VALUE, applied last
	Args []string // more CLI arguments

	StartTimeout time.Duration // for the record and socket; default 60s
}

// Session is one running TUI.
type Session struct {
	opts    Options
	panePID int       // the tmux pane's process: the qwen launcher
	tmux    proc.Tmux // the private tmux server
	tmpDir  string    // holds the tmux socket and any default dirs

	rec     Record // as first read once the socket was bound
	recPath string

	done     chan struct{} // closed when the launcher has exited
	stopOnce sync.Once
	stopErr  error
}

// Start runs a session and returns once its record names a bound inbox
// socket; t.Cleanup stops it. A session that cannot start fails the test.
func Start(t testing.TB, o Options) *Session {
	t.Helper()
	s, err := start(o)
	if err != nil {
		t.Fatalf("qwencli: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			screen, _ := s.Screen()
			t.Logf("qwencli: pid %d, screen:\n%s", s.PID(), screen)
		}
		if err := s.Stop(); err != nil {
			t.Errorf("qwencli: stopping pid %d: %v", s.PID(), err)
		}
	})
	return s
}

func start(o Options) (*Session, error) {
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
	if _, err := exec.LookPath("tmux"); err != nil {
		return nil, fmt.Errorf("the TUI needs tmux: %w", err)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = defaultStartTimeout
	}
	// One short directory per session for the tmux socket and every default
	// directory, removed by Stop: sockets must stay under 104 bytes.
	tmp, err := os.MkdirTemp("", "qw")
	if err != nil {
		return nil, err
	}
	s := &Session{tmpDir: tmp, tmux: proc.Tmux{Socket: filepath.Join(tmp, "tmux.sock"), Session: tmuxSession}, done: make(chan struct{})}
	for _, d := range []struct {
		dir  *string
		name string
	}{{&o.Cwd, "cwd"}, {&o.QwenHome, "qh"}, {&o.Home, "home"}, {&o.XDGRuntimeDir, "rt"}, {&o.TmpDir, "tmp"}} {
		if *d.dir == "" {
			*d.dir = filepath.Join(tmp, d.name)
		}
		if err := os.MkdirAll(*d.dir, 0o700); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	s.opts = o
	if err := writeSettings(filepath.Join(o.QwenHome, "settings.json"), o.Settings); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("writing settings.json: %w", err)
	}
	var args []string
	if o.ApprovalMode != "" {
		args = append(args, "--approval-mode", o.ApprovalMode)
	}
	if err := s.startTUI(environ(o), append(args, o.Args...)); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout)
	defer cancel()
	if err := s.waitRegistered(ctx); err != nil {
		screen, _ := s.Screen()
		s.Stop()
		return nil, fmt.Errorf("launcher pid %d did not register a bound inbox: %w\nscreen:\n%s", s.panePID, err, screen)
	}
	return s, nil
}

// environ is the child's whole environment: nothing is inherited but PATH,
// so a test run from inside a Qwen Code session does not pass on its
// QWEN_CODE_* variables (its messaging socket and token among them).
func environ(o Options) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + o.Home,
		"QWEN_HOME=" + o.QwenHome,
		"XDG_RUNTIME_DIR=" + o.XDGRuntimeDir,
		"TMPDIR=" + o.TmpDir,
		"OPENAI_API_KEY=" + DummyAPIKey,
		"OPENAI_BASE_URL=" + o.APIURL,
		"TERM=xterm-256color",
		"LANG=C.UTF-8",
	}
	return append(env, o.Env...)
}

// baseSettings make the CLI start offline without asking anything: the
// OpenAI auth type (so OPENAI_* is used), the fake's model, and no
// statistics, telemetry or update checks.
func baseSettings() map[string]any {
	return map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "openai"}},
		"model":     map[string]any{"name": "fake-model"},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"general":   map[string]any{"enableAutoUpdate": false},
		"telemetry": map[string]any{"enabled": false},
	}
}

// settingsMu serialises the read-modify-write of a shared settings.json
// between sessions started by one test binary.
var settingsMu sync.Mutex

// writeSettings merges the base settings and extra over what the file holds
// (the CLI adds keys of its own, such as "$version"), and writes it back
// whole.
func writeSettings(path string, extra map[string]any) error {
	settingsMu.Lock()
	defer settingsMu.Unlock()
	cfg := map[string]any{}
	switch b, err := os.ReadFile(path); {
	case err == nil:
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	maps.Copy(cfg, baseSettings())
	maps.Copy(cfg, extra)
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".qwencli-tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// waitRegistered polls the registry until a record written by a process
// under our launcher names a socket that exists.
func (s *Session) waitRegistered(ctx context.Context) error {
	dir := filepath.Join(s.opts.QwenHome, "sessions")
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := errors.New("no record yet")
	for {
		for _, rf := range records(dir) {
			if !descendsFrom(rf.rec.PID, s.panePID) {
				continue
			}
			if rf.rec.IPCPath == "" {
				last = fmt.Errorf("%s has no ipcPath yet", rf.path)
				continue
			}
			fi, err := os.Lstat(rf.rec.IPCPath)
			switch {
			case err != nil:
				last = err
			case fi.Mode()&os.ModeSocket == 0:
				last = fmt.Errorf("%s is not a socket", rf.rec.IPCPath)
			default:
				s.rec, s.recPath = rf.rec, rf.path
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("%w before registering; last check: %v", ErrExited, last)
		case <-ctx.Done():
			return fmt.Errorf("%w; last check: %v", context.Cause(ctx), last)
		case <-tick.C:
		}
	}
}

// PID is the process that wrote the record: the innermost node process, not
// the qwen launcher in the tmux pane.
func (s *Session) PID() int { return s.rec.PID }

// LauncherPID is the qwen launcher, the tmux pane's process.
func (s *Session) LauncherPID() int { return s.panePID }

// SessionID is the session id from the record as Start read it. /clear and
// /resume swap it; Record re-reads.
func (s *Session) SessionID() string { return s.rec.SessionID }

// Name is the session's name from the record.
func (s *Session) Name() string { return s.rec.Name }

// Ref is the short handle peers show after the name.
func (s *Session) Ref() string { return Ref(s.rec.SessionID) }

// IPCPath is the inbox socket from the record.
func (s *Session) IPCPath() string { return s.rec.IPCPath }

// IPCToken is the token the inbox requires, from the record.
func (s *Session) IPCToken() Token { return s.rec.IPCToken }

// RecordPath is the record file.
func (s *Session) RecordPath() string { return s.recPath }

// Record re-reads the record as it is now.
func (s *Session) Record() (Record, error) { return ReadRecord(s.recPath) }

// QwenHome is the session's QWEN_HOME.
func (s *Session) QwenHome() string { return s.opts.QwenHome }

// Cwd is the session's working directory.
func (s *Session) Cwd() string { return s.opts.Cwd }

// XDGRuntimeDir is the session's XDG_RUNTIME_DIR.
func (s *Session) XDGRuntimeDir() string { return s.opts.XDGRuntimeDir }

// Done is closed when the session's processes have exited.
func (s *Session) Done() <-chan struct{} { return s.done }

// Stop sends SIGTERM to the process that wrote the record and waits for the
// launcher to exit, sending SIGKILL to the whole pane after 20 s; then it
// stops the tmux server. It is safe to call more than once. SIGTERM goes to
// the innermost process because it is the one that removes the record and
// socket: a SIGTERM to the launcher ends the tree but leaves both behind.
func (s *Session) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Session) stop() error {
	defer func() {
		s.tmux.Kill()
		os.RemoveAll(s.tmpDir)
	}()
	if s.panePID == 0 {
		return nil
	}
	select {
	case <-s.done:
		return ErrExited
	default:
	}
	target := s.rec.PID
	if target == 0 {
		target = s.panePID // never registered: nothing to clean up
	}
	return proc.Terminate(target, s.done, stopTimeout, func() {
		// The pane's process leads its own process group: take the tree.
		syscall.Kill(-s.panePID, syscall.SIGKILL)
		syscall.Kill(target, syscall.SIGKILL)
	})
}
