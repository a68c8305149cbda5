package gatewaytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// World is one scratch machine: the directories a gateway and the sessions
// it reaches share, all under one root.
type World struct {
	Root      string // HOME and TMPDIR of the gateway
	ConfigDir string // CLAUDE_CONFIG_DIR
	Runtime   string // XDG_RUNTIME_DIR
	StateDir  string // GATEWAY_STATE_DIR
	QwenHome  string // QWEN_HOME
}

// NewWorld returns a World under a fresh short root (socket paths in it
// stay under the ~104-byte limit), with the Qwen home made too, as an
// installed Qwen Code would leave it.
func NewWorld(tb testing.TB) *World {
	tb.Helper()
	w := WorldAt(tb, testutil.ShortTempDir(tb))
	if err := os.MkdirAll(w.QwenHome, 0o700); err != nil {
		tb.Fatal(err)
	}
	return w
}

// WorldAt returns a World under root, making its Claude config and runtime
// directories. The Qwen home and the state directory are left to whoever
// uses them first (a test may put something else in their place).
func WorldAt(tb testing.TB, root string) *World {
	tb.Helper()
	w := &World{Root: root, ConfigDir: filepath.Join(root, "claude"), Runtime: filepath.Join(root, "run"),
		StateDir: filepath.Join(root, "state"), QwenHome: filepath.Join(root, "qwen")}
	for _, d := range []string{w.ConfigDir, w.Runtime} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	return w
}

// Vars is the World's own environment: what a gateway in it sees on top
// of (or, in process, instead of) the test process's.
func (w *World) Vars() map[string]string {
	return map[string]string{"CLAUDE_CONFIG_DIR": w.ConfigDir, "XDG_RUNTIME_DIR": w.Runtime,
		"GATEWAY_STATE_DIR": w.StateDir, "QWEN_HOME": w.QwenHome, "HOME": w.Root, "TMPDIR": w.Root}
}

// Env is the test process's environment with the World's on top, for a
// gateway binary or CLI verb run in the World. The process's GATEWAY_* and
// OTEL_* variables are left out: a gateway in a World is configured by its
// arguments and the World alone.
func (w *World) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GATEWAY_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	for k, v := range w.Vars() {
		env = append(env, k+"="+v)
	}
	return env
}

// Getenv looks a variable up in the World's own environment only, for a
// gateway served in process that must not see the developer's.
func (w *World) Getenv(key string) string { return w.Vars()[key] }

// Socket is the gateway's control socket in the World.
func (w *World) Socket() string { return filepath.Join(w.StateDir, "gateway.sock") }
