package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// TestMain lets this test binary stand in for the gateway binary when the
// alias pool starts a worker: `<test binary> alias-worker --name N`, and
// for Claude Code when a hosted session starts (fakeHostedCLI); and
// removes the gateway binary the end-to-end tests built.
func TestMain(m *testing.M) {
	if os.Getenv(fakeCLIEnv) == "1" {
		os.Exit(fakeHostedCLI(os.Args[1:]))
	}
	if os.Getenv("GATEWAY_TEST_AS_GATEWAY") == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, os.Args[1:])
		stop()
		os.Exit(code)
	}
	os.Exit(gatewaytest.Main(m))
}

type poolEvents struct {
	mu  sync.Mutex
	evs []message.Event
	ch  chan struct{}
}

func (p *poolEvents) add(_ string, ev message.Event) {
	p.mu.Lock()
	p.evs = append(p.evs, ev)
	close(p.ch)
	p.ch = make(chan struct{})
	p.mu.Unlock()
}

func (p *poolEvents) wait(t *testing.T, pred func(message.Event) bool) message.Event {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		p.mu.Lock()
		for _, ev := range p.evs {
			if pred(ev) {
				p.mu.Unlock()
				return ev
			}
		}
		ch := p.ch
		p.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("timed out waiting for an alias event")
		}
	}
}

func TestAliasWorkersRegisterSendAndRelay(t *testing.T) {
	root := t.TempDir()
	g := startBinary(t, root)
	fk := newFake(t, g, "work-08", message.ModePrompting)
	events := &poolEvents{ch: make(chan struct{})}
	pool := claude.NewAliasPool(claude.PoolConfig{
		Command: func(name string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "alias-worker", "--name", name)
			cmd.Env = append(os.Environ(), "GATEWAY_TEST_AS_GATEWAY=1",
				"CLAUDE_CONFIG_DIR="+g.ConfigDir, "XDG_RUNTIME_DIR="+g.Runtime)
			return cmd
		},
		Events: events.add,
	})
	defer pool.Close()
	a, err := pool.Get(ctxT(t), "qwen-work")
	if err != nil {
		t.Fatal(err)
	}
	if a.PID == os.Getpid() || a.Address == "" {
		t.Fatalf("alias = %+v, want its own process", a)
	}
	t.Run("the alias is a registered peer of its own, hidden from the gateway's roster", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(g.ConfigDir, "sessions", itoaPID(a.PID)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		e, err := claude.ParseEntry(b)
		if err != nil || e.Name != "qwen-work" || e.Kind != claude.KindAlias {
			t.Fatalf("entry = %+v, %v", e, err)
		}
	})
	t.Run("a message from the alias arrives from its own socket under its name", func(t *testing.T) {
		m := message.Message{ID: "11111111-1111-4111-8111-111111111111", To: fk.Address(), ToPID: fk.PID(), Body: "bridged hello", Mode: message.ModePrompting}
		if err := pool.Send(ctxT(t), "qwen-work", m); err != nil {
			t.Fatal(err)
		}
		r, err := fk.WaitReceived(ctxT(t), func(r fakeclaude.Received) bool { return r.Frame.MsgID == m.ID })
		if err != nil {
			t.Fatal(err)
		}
		if r.Content.Envelope.FromName != "qwen-work" || r.Frame.From != a.Address || r.SenderID != a.PID || r.Auth != message.AuthPeer {
			t.Fatalf("received %+v from pid %d", r.Content.Envelope, r.SenderID)
		}
	})
	t.Run("a receipt to the alias is relayed to the gateway", func(t *testing.T) {
		m := message.Message{ID: "22222222-2222-4222-8222-222222222222", To: fk.Address(), ToPID: fk.PID(), Body: "bypass via alias", Mode: message.ModeBypass}
		if err := pool.Send(ctxT(t), "qwen-work", m); err != nil {
			t.Fatal(err)
		}
		ev := events.wait(t, func(ev message.Event) bool { return ev.Receipt != nil && ev.Receipt.MsgID == m.ID })
		if ev.Receipt.Status != message.StatusHeld {
			t.Fatalf("receipt = %+v, want held", ev.Receipt)
		}
	})
	t.Run("a message to the alias name is relayed to the gateway", func(t *testing.T) {
		if _, err := fk.Send(ctxT(t), a.Address, "reply to qwen", message.ModePrompting); err != nil {
			t.Fatal(err)
		}
		ev := events.wait(t, func(ev message.Event) bool { return ev.Message != nil && ev.Message.Body == "reply to qwen" })
		if ev.Message.FromName != "work-08" {
			t.Fatalf("message = %+v", ev.Message)
		}
	})
	t.Run("closing the pool stops the worker and removes its registration", func(t *testing.T) {
		pool.Close()
		if _, err := os.Stat(filepath.Join(g.ConfigDir, "sessions", itoaPID(a.PID)+".json")); !os.IsNotExist(err) {
			t.Fatalf("the alias's entry is still there: %v", err)
		}
	})
}

func itoaPID(pid int) string { return strconv.Itoa(pid) }

func TestAliasRetirement(t *testing.T) {
	root := t.TempDir()
	g := startBinary(t, root)
	t.Run("an on-demand alias idle past IdleAfter is retired", func(t *testing.T) {
		pool := claude.NewAliasPool(claude.PoolConfig{
			Command: func(name string) *exec.Cmd {
				cmd := exec.Command(os.Args[0], "alias-worker", "--name", name)
				cmd.Env = append(os.Environ(), "GATEWAY_TEST_AS_GATEWAY=1",
					"CLAUDE_CONFIG_DIR="+g.ConfigDir, "XDG_RUNTIME_DIR="+g.Runtime)
				return cmd
			},
			IdleAfter: time.Millisecond,
		})
		defer pool.Close()
		if _, err := pool.Get(ctxT(t), "briefly"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		pool.Retire(map[string]bool{})
		deadline := time.Now().Add(10 * time.Second)
		for len(pool.Aliases()) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the idle alias is still running")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	pool := claude.NewAliasPool(claude.PoolConfig{
		Command: func(name string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "alias-worker", "--name", name)
			cmd.Env = append(os.Environ(), "GATEWAY_TEST_AS_GATEWAY=1",
				"CLAUDE_CONFIG_DIR="+g.ConfigDir, "XDG_RUNTIME_DIR="+g.Runtime)
			return cmd
		},
		IdleAfter: time.Hour,
	})
	defer pool.Close()
	names := func() map[string]bool {
		out := map[string]bool{}
		for _, a := range pool.Aliases() {
			out[a.Name] = true
		}
		return out
	}
	waitGone := func(name string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for names()[name] {
			if time.Now().After(deadline) {
				t.Fatalf("alias %q still running", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, n := range []string{"published", "on-demand"} {
		if _, err := pool.Get(ctxT(t), n); err != nil {
			t.Fatal(err)
		}
	}
	pool.Retire(map[string]bool{"published": true})
	if got := names(); !got["published"] || !got["on-demand"] {
		t.Fatalf("aliases = %v: a published alias and a fresh on-demand one both stay", got)
	}
	pool.Retire(map[string]bool{})
	waitGone("published")
	if !names()["on-demand"] {
		t.Fatal("an on-demand alias idle for less than IdleAfter was retired")
	}
}

// The gap: serve's --require-auth left its alias workers, each a door into
// the gateway, taking messages without a token.
func TestAnAliasWorkerOfARequireAuthGatewayRefusesAnUnauthenticatedMessage(t *testing.T) {
	g := startBinary(t, t.TempDir())
	fk := newFake(t, g, "work-09", message.ModePrompting)
	events := &poolEvents{ch: make(chan struct{})}
	pool := claude.NewAliasPool(claude.PoolConfig{
		Command: func(name string) *exec.Cmd {
			args := []string{"alias-worker", "--name", name}
			if name == "guarded" {
				args = append(args, "--require-auth")
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "GATEWAY_TEST_AS_GATEWAY=1",
				"CLAUDE_CONFIG_DIR="+g.ConfigDir, "XDG_RUNTIME_DIR="+g.Runtime)
			return cmd
		},
		Events: events.add,
	})
	defer pool.Close()
	for _, tc := range []struct {
		alias  string
		refuse bool
	}{{"open", false}, {"guarded", true}} {
		a, err := pool.Get(ctxT(t), tc.alias)
		if err != nil {
			t.Fatal(err)
		}
		id := "3333333" + strconv.Itoa(len(tc.alias)) + "-3333-4333-8333-333333333333"
		f := claude.NewUserFrame(fk.Address(), id, claude.Envelope{From: fk.Address(), FromName: "tester", FromMode: "prompting", Body: "no token"}, nil)
		b, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("unix", strings.TrimPrefix(a.Address, "uds:"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Write(append(b, '\n'))
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		ev := events.wait(t, func(ev message.Event) bool {
			return ev.Message != nil && ev.Message.ID == id || ev.Drop != nil && ev.Drop.MsgID == id
		})
		if refused := ev.Drop != nil && ev.Drop.Reason == message.DropUnauthenticated; refused != tc.refuse {
			t.Fatalf("alias %s: event %+v, want refused %v", tc.alias, ev, tc.refuse)
		}
	}
}
