package interop

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/message"
)

// gatewayBin is the gateway built once for the whole run.
var gatewayBin string

func TestMain(m *testing.M) {
	if os.Getenv("GATEWAY_INTEROP") != "1" {
		fmt.Println("interop: skipped; run with GATEWAY_INTEROP=1 after .ci/install-interop.sh (scripts/test.sh does both)")
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "gw-interop-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gatewayBin = filepath.Join(dir, "gateway")
	out, err := exec.Command("go", "build", "-o", gatewayBin, "github.com/sessiongateway/gateway/cmd/gateway").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the gateway: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needInterop skips without GATEWAY_INTEROP=1 and fails when the real CLI
// is missing or of another version.
func needInterop(t *testing.T) string {
	t.Helper()
	if os.Getenv("GATEWAY_INTEROP") != "1" {
		t.Skip("interop tests need GATEWAY_INTEROP=1 and the real CLI (bash scripts/test.sh)")
	}
	bin, err := claudecli.Bin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := claudecli.CheckVersion(ctx, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// world is one scratch machine: a shared Claude config dir and runtime dir
// for the gateway and the real sessions.
type world struct {
	root      string
	configDir string
	runtime   string
	stateDir  string
	qwenHome  string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	// A short root keeps socket paths under the 103-byte limit.
	root, err := os.MkdirTemp("/tmp", "gwi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	w := &world{root: root, configDir: filepath.Join(root, "c"), runtime: filepath.Join(root, "r"), stateDir: filepath.Join(root, "s"), qwenHome: filepath.Join(root, "q")}
	for _, d := range []string{w.configDir, w.runtime, w.qwenHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w *world) env() []string {
	return append(os.Environ(), "CLAUDE_CONFIG_DIR="+w.configDir, "XDG_RUNTIME_DIR="+w.runtime,
		"GATEWAY_STATE_DIR="+w.stateDir, "QWEN_HOME="+w.qwenHome, "TMPDIR="+w.root)
}

// gateway is a running `gateway serve`.
type gateway struct {
	w    *world
	cmd  *exec.Cmd
	logs *lockedBuf
	name string
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

func startGateway(t testing.TB, w *world, name string, args ...string) *gateway {
	t.Helper()
	g := &gateway{w: w, logs: &lockedBuf{}, name: name}
	g.cmd = exec.Command(gatewayBin, append([]string{"serve", "--name", name, "--log-level", "debug"}, args...)...)
	g.cmd.Env = w.env()
	g.cmd.Stderr = g.logs
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.stop(t)
		if t.Failed() {
			t.Logf("gateway logs:\n%s", g.logs.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(w.stateDir, "gateway.sock")); err == nil {
			if _, _, err := g.run(t, "sessions", "--json"); err == nil {
				return g
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("gateway did not come up:\n%s", g.logs.String())
	return nil
}

func (g *gateway) stop(t testing.TB) {
	if g.cmd.ProcessState != nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("gateway exited with %v", err)
		}
	case <-time.After(15 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
		t.Errorf("gateway did not stop on SIGTERM")
	}
}

// run runs a gateway CLI command and returns stdout, the exit code and an
// error for anything but a clean exit.
func (g *gateway) run(t testing.TB, args ...string) (string, int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gatewayBin, args...)
	cmd.Env = g.w.env()
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

func (g *gateway) sessions(t testing.TB) []message.Session {
	t.Helper()
	out, _, err := g.run(t, "sessions", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ss []message.Session
	if err := json.Unmarshal([]byte(out), &ss); err != nil {
		t.Fatalf("sessions --json: %v\n%s", err, out)
	}
	return ss
}

// watcher runs `gateway watch --json` and collects its events.
type watcher struct {
	mu      sync.Mutex
	events  []message.Event
	changed chan struct{}
}

func (g *gateway) watch(t *testing.T) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// --since 0 replays every kept event, so nothing that happened before
	// the stream opened is missed.
	cmd := exec.CommandContext(ctx, gatewayBin, "watch", "--json", "--since", "0")
	cmd.Env = g.w.env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &watcher{changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var ev message.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("watch --json printed a bad line %q: %v", sc.Text(), err)
				continue
			}
			w.mu.Lock()
			w.events = append(w.events, ev)
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() { cancel(); _ = cmd.Wait(); <-done })
	return w
}

// find returns the first event so far that pred accepts, without waiting.
func (w *watcher) find(pred func(message.Event) bool) (message.Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range w.events {
		if pred(ev) {
			return ev, true
		}
	}
	return message.Event{}, false
}

func (w *watcher) wait(t *testing.T, d time.Duration, pred func(message.Event) bool) message.Event {
	t.Helper()
	timeout := time.After(d)
	for {
		w.mu.Lock()
		for _, ev := range w.events {
			if pred(ev) {
				w.mu.Unlock()
				return ev
			}
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			w.mu.Lock()
			defer w.mu.Unlock()
			t.Fatalf("no matching event within %v; saw %d events: %+v", d, len(w.events), w.events)
		}
	}
}
