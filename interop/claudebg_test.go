package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/leg/claudebg"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/fakedaemon"
)

// The background-agent daemon of the real CLI and testkit/fakedaemon pass
// the same conformance checks; see interop/FINDINGS-bg.md.
func TestTheRealBackgroundDaemonAndTheStandInSpeakOneControlProtocol(t *testing.T) {
	bin := needInterop(t)
	t.Run("the stand-in", func(t *testing.T) {
		d := fakedaemon.Start(t, fakedaemon.Options{})
		job := d.AddJob(fakedaemon.Record{Cwd: t.TempDir()})
		fakedaemon.Conformance(t, d.SocketPath(), d.Key(), job.Short)
	})
	t.Run("the real daemon", func(t *testing.T) {
		d := startRealDaemon(t, bin)
		fakedaemon.Conformance(t, d.sock, d.key, d.short)
	})
}

// The claude-bg leg against the real daemon: it lists the agent `claude
// --bg` started, shows its output, types a message into it as its next
// turn, stops it, and dispatches a new one.
func TestTheBackgroundAgentLegFollowsARealAgent(t *testing.T) {
	bin := needInterop(t)
	d := startRealDaemon(t, bin)
	l, err := claudebg.New(claudebg.Config{ConfigDir: filepath.Join(d.home, ".claude"), PollEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan message.Event, 4096)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, events) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addr := claudebg.AddressPrefix + d.short

	ss, err := l.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var s message.Session
	for _, x := range ss {
		if x.Address == addr {
			s = x
		}
	}
	if s.Name != "pong from fake" || s.Cwd != d.cwd || !s.Reachable || s.Kind != claudebg.KindBackground || s.Status != "idle" {
		t.Fatalf("the real agent is listed as %+v (all: %+v)", s, ss)
	}
	// What the agent's terminal showed before the leg came is replayed.
	said := func(kind, text string) {
		t.Helper()
		timeout := time.After(fakedaemon.Bound)
		for {
			select {
			case ev := <-events:
				if ev.Remote != nil && ev.Remote.Address == addr && ev.Remote.Kind == kind && strings.Contains(ev.Remote.Text, text) {
					if strings.ContainsRune(ev.Remote.Text, 0x1b) {
						t.Fatalf("an escape is left in %q", ev.Remote.Text)
					}
					return
				}
			case <-timeout:
				t.Fatalf("no %s event with %q from the real agent", kind, text)
			}
		}
	}
	said(claudebg.KindTerminal, "pong from fake")

	rc, err := l.Send(ctx, message.Message{ID: "bg-1", To: addr, Body: "third turn please"})
	if err != nil || rc.Status != message.StatusSent {
		t.Fatalf("send: %+v %v", rc, err)
	}
	// Its state says the turn began, and its terminal shows the prompt,
	// then the turn's answer (its words apart), in one event or several,
	// in whatever order the daemon sends them.
	var shown strings.Builder
	began := false
	timeout := time.After(fakedaemon.Bound)
	for !began || !strings.Contains(shown.String(), "third turn please") || !strings.Contains(shown.String(), "● pong from fake") {
		select {
		case ev := <-events:
			if ev.Remote == nil || ev.Remote.Address != addr {
				continue
			}
			began = began || ev.Remote.Kind == claudebg.KindState && strings.Contains(ev.Remote.Text, "third turn please")
			if ev.Remote.Kind == claudebg.KindTerminal {
				shown.WriteString(ev.Remote.Text + "\n")
			}
		case <-timeout:
			t.Fatalf("the second turn did not show (began: %v); the terminal showed:\n%s", began, shown.String())
		}
	}

	if err := l.Stop(ctx, s); err != nil {
		t.Fatal(err)
	}
	said(claudebg.KindSettled, "killed")
	ss, err = l.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ss {
		if x.Address == addr && x.Reachable {
			t.Fatalf("a stopped agent is still listed reachable: %+v", x)
		}
	}

	// New work handed to the daemon runs as an agent of its own, which
	// the leg follows at once.
	s, err = l.Dispatch(ctx, "say hi again", d.cwd)
	if err != nil {
		t.Fatal(err)
	}
	addr = s.Address
	// Its terminal shows its first prompt. (Its turn does not reach the
	// fake API: a worker dispatched over the socket with no env lacks the
	// CLI's ANTHROPIC_BASE_URL; FINDINGS-bg §6.)
	said(claudebg.KindTerminal, "say hi again")
	if err := l.Stop(ctx, s); err != nil {
		t.Fatal(err)
	}
	said(claudebg.KindSettled, "killed")
}

type realDaemon struct {
	sock, key, short, home, cwd string
}

var backgrounded = regexp.MustCompile(`backgrounded · ([a-f0-9]{8})`)

// startRealDaemon runs `claude --bg` in a private HOME against the fake
// API: the CLI starts the daemon itself. It returns once the job's first
// turn is over. Cleanup shuts the daemon down over its socket and waits
// for it and its workers to go.
func startRealDaemon(t *testing.T, bin string) realDaemon {
	t.Helper()
	api := fakeanthropic.Start(t, fakeanthropic.Always(fakeanthropic.Text("pong from fake")))
	o, env, err := claudecli.Prepare(t, claudecli.Options{APIURL: api.URL(), Env: []string{"TERM=xterm-256color", "LANG=C.UTF-8"}})
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(o.Home, ".claude")
	sock, err := fakedaemon.SocketPath(config)
	if err != nil {
		t.Fatal(err)
	}
	d := realDaemon{sock: sock, home: o.Home, cwd: o.Cwd}
	t.Cleanup(func() { stopRealDaemon(t, d, config) })

	out := runCLI(t, bin, o.Cwd, env, "--bg", "say hi")
	m := backgrounded.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("claude --bg printed no job id:\n%s", out)
	}
	d.short = m[1]

	for _, dir := range []string{filepath.Dir(filepath.Dir(sock)), filepath.Dir(sock)} {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("socket dir %s: %v %v, want mode 0700", dir, fi, err)
		}
	}
	keyFile := filepath.Join(config, "daemon", "control.key")
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(keyFile); fi.Mode().Perm() != 0o600 || !regexp.MustCompile(`^[a-f0-9]{32}$`).Match(b) {
		t.Fatalf("control.key %q mode %v, want 32 hex characters, 0600", b, fi.Mode().Perm())
	}
	d.key = string(b)

	waitIdle(t, d)
	agents := runCLI(t, bin, o.Cwd, env, "agents", "--json")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(agents), &listed); err != nil || len(listed) != 1 || listed[0]["id"] != d.short {
		t.Fatalf("claude agents --json: %v\n%s", err, agents)
	}
	return d
}

func runCLI(t *testing.T, bin, cwd string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = cwd, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitIdle polls list until the job's first turn is done: a reply to a
// job still starting is ERESPAWNING, not what the checks are about.
func waitIdle(t *testing.T, d realDaemon) {
	t.Helper()
	deadline := time.Now().Add(fakedaemon.Bound)
	for {
		a, err := fakedaemon.Do(d.sock, map[string]any{"proto": 1, "op": "list"})
		if err == nil {
			jobs, _ := a["jobs"].([]any)
			for _, j := range jobs {
				if m, _ := j.(map[string]any); m["short"] == d.short && m["tempo"] == "idle" && m["detail"] == "pong from fake" {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not finish its first turn: %v %v", d.short, a, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopRealDaemon sends shutdown (no key needed) and waits for the daemon
// (pid in daemon.lock) and the workers list named to exit; any left after
// the bound are killed by pid.
func stopRealDaemon(t *testing.T, d realDaemon, config string) {
	var pids []int
	var lock struct{ PID int }
	if b, err := os.ReadFile(filepath.Join(config, "daemon.lock")); err == nil && json.Unmarshal(b, &lock) == nil && lock.PID > 0 {
		pids = append(pids, lock.PID)
	}
	if a, err := fakedaemon.Do(d.sock, map[string]any{"proto": 1, "op": "list"}); err == nil {
		jobs, _ := a["jobs"].([]any)
		for _, j := range jobs {
			if m, _ := j.(map[string]any); m["pid"] != nil {
				pids = append(pids, int(m["pid"].(float64)))
			}
		}
	}
	if a, err := fakedaemon.Do(d.sock, map[string]any{"op": "shutdown"}); err != nil || a["ok"] != true {
		t.Logf("shutdown: %v %v", a, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			t.Logf("pid %d outlived shutdown; killing it", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	_ = os.RemoveAll(filepath.Dir(d.sock))
}
