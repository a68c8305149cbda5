package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/lifecycle"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
)

// sentOK is a message the API returned an id for.
type sentOK struct {
	body string
	out  message.Status
}

func TestSIGTERMDuringTrafficLosesNothingAcceptedAndDeregisters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gateway as a child process")
	}
	const grace = 5 * time.Second
	root := t.TempDir()
	g := startBinary(t, root, "--legs", "claude", "--bridge=false", "--grace", grace.String(), "--settle", "300ms")
	fk := fakeclaude.Start(t, fakeclaude.Config{Name: "work-08", ConfigDir: g.ConfigDir, RuntimeDir: g.Runtime})
	gwAddr := gatewayAddress(t, g)
	gwSocket := strings.TrimPrefix(gwAddr, "uds:")
	regBefore, _ := filepath.Glob(filepath.Join(g.ConfigDir, "sessions", "*"))

	// A peer subscribed to the gateway's idle notices and not yet answered
	// must hear exited: a pending hold defers the idle notice (as in Claude
	// Code), so the subscription is still open at SIGTERM.
	held, err := fk.Send(ctxT(t), gwAddr, "hold me", message.ModeBypass)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fk.WaitControl(ctxT(t), func(f claude.Frame) bool { return f.OrigMsgID == held && f.Status == claude.WireHeld }); err != nil {
		t.Fatal(err)
	}
	if err := fk.SendFrame(ctxT(t), gwAddr, claude.NewNotifyWhenIdle(fk.Address(), "sub-1", "prompting")); err != nil {
		t.Fatal(err)
	}

	// SIGHUP reloads and leaves the gateway serving.
	if err := g.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(g.Logs(), "SIGHUP: reloaded"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP was not logged as a reload")
		}
	}
	if _, err := g.Sessions(ctxT(t)); err != nil {
		t.Fatalf("after SIGHUP the gateway does not answer: %v", err)
	}

	// Three senders stream messages (fewer than the receiver's 30-message
	// burst, so none is paced away) while SIGTERM arrives. Each send waits
	// for its final receipt (the 300 ms settle window), so sends are in
	// flight when the signal comes: they must finish, not be cut.
	const senders, each = 3, 8
	var (
		mu      sync.Mutex
		ok      []sentOK
		wg      sync.WaitGroup
		sigOnce sync.Once
		sigAt   time.Time
	)
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf("sender %d message %d", s, i)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				out, err := g.Send(ctx, api.SendBody{To: fk.Address(), Text: body, Wait: true, Timeout: "3s"})
				cancel()
				if err != nil {
					return // refused: the gateway stopped accepting
				}
				mu.Lock()
				ok = append(ok, sentOK{body: body, out: out.Status})
				n := len(ok)
				mu.Unlock()
				if n == senders*2 {
					sigOnce.Do(func() {
						sigAt = time.Now()
						if err := g.Signal(syscall.SIGTERM); err != nil {
							t.Error(err)
						}
					})
				}
			}
		})
	}
	wg.Wait()
	sigOnce.Do(func() { // every send finished before the signal: send it now
		sigAt = time.Now()
		_ = g.Signal(syscall.SIGTERM)
	})
	select {
	case <-g.Exited():
		err = g.ExitErr()
	case <-time.After(grace + 5*time.Second):
		t.Fatalf("the gateway did not exit within its grace period of %v", grace)
	}
	took := time.Since(sigAt)
	t.Logf("%d of %d messages accepted; exit %v after SIGTERM", len(ok), senders*each, took)

	t.Run("the process exits 0 within the grace period", func(t *testing.T) {
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("exit code %d", ee.ExitCode())
			}
			t.Fatal(err)
		}
		if took > grace+time.Second { // a second for the process to be reaped
			t.Errorf("took %v after SIGTERM, grace is %v", took, grace)
		}
	})
	t.Run("every message the API accepted was written to its receiver", func(t *testing.T) {
		if len(ok) < senders*2 {
			t.Fatalf("only %d messages sentOK before the signal", len(ok))
		}
		got := map[string]bool{}
		for _, r := range fk.Received() {
			for _, a := range ok {
				if strings.Contains(r.Content.Raw, a.body) {
					got[a.body] = true
				}
			}
		}
		for _, a := range ok {
			if a.out == message.StatusFailed || a.out == message.StatusDropped {
				t.Errorf("%q was sentOK as %v", a.body, a.out)
			}
			if !got[a.body] {
				t.Errorf("%q was sentOK (%v) but never arrived", a.body, a.out)
			}
		}
	})
	t.Run("idle subscribers heard exited", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := fk.WaitControl(ctx, func(f claude.Frame) bool {
			return f.Action == claude.ActionPeerIdleNotice && f.OrigMsgID == "sub-1" && f.State == "exited"
		}); err != nil {
			t.Fatal("no exited notice:", err)
		}
	})
	t.Run("the registry entry, key file and sockets are gone", func(t *testing.T) {
		regAfter, _ := filepath.Glob(filepath.Join(g.ConfigDir, "sessions", "*"))
		if len(regAfter) != len(regBefore)-2 {
			t.Errorf("registration files before %v, after %v: want the gateway's entry and key gone", regBefore, regAfter)
		}
		for _, f := range []string{gwSocket, filepath.Join(g.StateDir, "gateway.sock")} {
			if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is still there (%v)", f, err)
			}
		}
	})
	t.Run("the log says it drained and stopped", func(t *testing.T) {
		log := g.Logs()
		for _, want := range []string{"stopping: draining the API", "deregistered Claude Code peer", "gateway stopped"} {
			if !strings.Contains(log, want) {
				t.Errorf("no %q in the log", want)
			}
		}
	})
}

func TestSIGHUPReloads(t *testing.T) {
	tests := []struct {
		name      string
		env       string
		tls       error // nil: reloads fine
		wantLevel slog.Level
		wantLog   []string
	}{
		{"GATEWAY_LOG_LEVEL moves the level", "debug", nil, slog.LevelDebug,
			[]string{`"what":"log level","now":"debug"`, `"what":"TLS certificate","now":"reloaded"`}},
		{"without GATEWAY_LOG_LEVEL the level stays", "", nil, slog.LevelWarn,
			[]string{`"what":"log level","now":"unchanged","reason":"GATEWAY_LOG_LEVEL is not set"`}},
		{"a bad level is refused and the old one kept", "loud", nil, slog.LevelWarn,
			[]string{`reload failed`, `GATEWAY_LOG_LEVEL \"loud\"`}},
		{"a failing TLS reload is logged and the rest still reloads", "error", errors.New("no such file"), slog.LevelError,
			[]string{`"what":"TLS certificate","err":"no such file"`, `"what":"log level","now":"error"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{getenv: func(k string) string {
				if k == "GATEWAY_LOG_LEVEL" {
					return tt.env
				}
				return ""
			}}
			o := lifecycleFlags(newFlags(e, "serve"), e)
			lv := new(slog.LevelVar)
			lv.Set(slog.LevelWarn)
			logged := hupOnce(t, o.reloaders(lv, tlsReloader{tt.tls}))
			if lv.Level() != tt.wantLevel {
				t.Errorf("level %v, want %v", lv.Level(), tt.wantLevel)
			}
			for _, w := range tt.wantLog {
				if !strings.Contains(logged, w) {
					t.Errorf("no %s in the log:\n%s", w, logged)
				}
			}
		})
	}
}

// hupOnce delivers one SIGHUP to rs and returns the JSON log once every
// reloader logged.
func hupOnce(t *testing.T, rs []lifecycle.Reloader) string {
	t.Helper()
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	hup := make(chan os.Signal, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); lifecycle.ReloadOn(ctx, log, hup, rs) }()
	hup <- syscall.SIGHUP
	for deadline := time.Now().Add(5 * time.Second); strings.Count(buf.String(), "\n") < len(rs); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("not every reloader logged: %s", buf.String())
		}
	}
	cancel()
	<-done
	return buf.String()
}

// serve's reload re-reads the config file's level; a level the command
// line or a variable sets is above the file, and SIGHUP keeps it and says
// which one pins it.
func TestSIGHUPSaysWhatKeepsTheLogLevel(t *testing.T) {
	tests := []struct {
		name      string
		vars      map[string]string
		args      []string
		wantLevel slog.Level
		wantLog   string
	}{
		{"--log-level keeps the level and the log names the flag", nil, []string{"--log-level", "debug"}, slog.LevelWarn,
			`"what":"log level","now":"unchanged","reason":"set by --log-level"`},
		{"GATEWAY_LOG_LEVEL keeps the level and the log names the variable", map[string]string{"GATEWAY_LOG_LEVEL": "debug"}, nil, slog.LevelWarn,
			`"what":"log level","now":"unchanged","reason":"set by GATEWAY_LOG_LEVEL"`},
		{"--log-level beats GATEWAY_LOG_LEVEL, and the log names the flag", map[string]string{"GATEWAY_LOG_LEVEL": "info"}, []string{"--log-level", "debug"}, slog.LevelWarn,
			`"what":"log level","now":"unchanged","reason":"set by --log-level"`},
		{"the config file's level is read again, with no reason to give", nil, nil, slog.LevelError,
			`"what":"log level","now":"error"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			vars := map[string]string{"GATEWAY_STATE_DIR": dir}
			for k, v := range tt.vars {
				vars[k] = v
			}
			writeConf(t, dir, "config.json", `{"log-level": "warn"}`, 0o600)
			plan, errs := setup(t, vars, append([]string{"--legs", "claude"}, tt.args...)...)
			if plan == nil {
				t.Fatal(errs)
			}
			writeConf(t, dir, "config.json", `{"log-level": "error"}`, 0o600)
			lv := new(slog.LevelVar)
			lv.Set(slog.LevelWarn)
			logged := hupOnce(t, plan.cfg.life.reloaders(lv, nil))
			if lv.Level() != tt.wantLevel {
				t.Errorf("level %v, want %v", lv.Level(), tt.wantLevel)
			}
			if !strings.Contains(logged, tt.wantLog) {
				t.Errorf("no %s in the log:\n%s", tt.wantLog, logged)
			}
		})
	}
}

type tlsReloader struct{ err error }

func (r tlsReloader) ReloadTLS() error { return r.err }

func TestGraceFlag(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    time.Duration
		wantErr bool
	}{
		{"no flag gives 10s", nil, 10 * time.Second, false},
		{"a positive duration is taken", []string{"--grace", "3s"}, 3 * time.Second, false},
		{"zero is refused", []string{"--grace", "0s"}, 0, true},
		{"a negative duration is refused", []string{"--grace", "-1s"}, 0, true},
		{"a bare number is refused", []string{"--grace", "10"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
			fs := newFlags(e, "serve")
			o := lifecycleFlags(fs, e)
			err := fs.Parse(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && o.grace != tt.want {
				t.Errorf("grace = %v, want %v", o.grace, tt.want)
			}
		})
	}
}

// plainServer is an API server without TLS.
type plainServer struct{ tlsReloader }

func (plainServer) TLSConfig() *tls.Config { return nil }

func TestATLSReloadIsOnlyListedWhenTheAPIServesTLS(t *testing.T) {
	tests := []struct {
		name string
		srv  any
		want int
	}{
		{"a server serving TLS gets a TLS reload", tlsReloader{}, 2},
		{"a server without TLS gets none", plainServer{}, 1},
		{"a server that cannot reload gets none", struct{}{}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &lifecycleOpts{grace: defaultGrace}
			if got := len(o.reloaders(new(slog.LevelVar), tt.srv)); got != tt.want {
				t.Fatalf("%d reloaders, want %d", got, tt.want)
			}
		})
	}
}

func TestSIGTERMFlushesTheOutboxOrKeepsItStored(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gateway as a child process")
	}
	const n, grace = 5, 6 * time.Second
	tests := []struct {
		name string
		// before and atSignal are what the server does with posts before
		// and from the signal on.
		before, atSignal postMode
		wantKept         int // messages still in the outbox after exit
		wantOnSrv        int // messages the server stored
	}{
		{"messages waiting on a server that answers again are delivered before exit", postHold, postPass, 0, n},
		{"messages a server keeps refusing stay stored, and the exit is still in time", postRefuse, postRefuse, n, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newOutboxCloud(t)
			// The first post is held or refused: the rest of the lane waits
			// behind it, so all are pending at the signal.
			c.proxy.setMode(tt.before)
			root := t.TempDir()
			g := startBinary(t, root, "--legs", "remote", "--remote-url", c.proxy.url, "--remote-org", e2eOrg,
				"--remote-token-file", c.tokenFile, "--remote-follow", c.sid, "--grace", grace.String())
			for i := range n {
				out, err := g.Send(ctxT(t), api.SendBody{To: "bridge:" + c.sid, Text: fmt.Sprintf("flushed message %d", i)})
				if err != nil || !accepted(out.Status) {
					t.Fatalf("send %d: %+v %v, want it accepted", i, out, err)
				}
			}
			testutil.EventuallyWithin(t, 20*time.Second, "the first post reached the server", func() bool { return c.proxy.saw("flushed message 0") })
			sigAt := time.Now()
			if err := g.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			c.proxy.setMode(tt.atSignal)
			select {
			case <-g.Exited():
			case <-time.After(grace + 5*time.Second):
				t.Fatalf("the gateway did not exit within its grace period of %v", grace)
			}
			if g.ExitErr() != nil {
				t.Fatalf("exit: %v", g.ExitErr())
			}
			if took := time.Since(sigAt); took > grace+time.Second {
				t.Errorf("took %v after SIGTERM, grace is %v", took, grace)
			}
			if kept := storedPending(t, g.StateDir); kept != tt.wantKept {
				t.Errorf("%d messages still in the outbox, want %d", kept, tt.wantKept)
			}
			if stored := len(c.users()); stored != tt.wantOnSrv {
				t.Errorf("the server stored %d messages, want %d", stored, tt.wantOnSrv)
			}
		})
	}
}

// storedPending counts the messages a stopped gateway's outbox still holds.
func storedPending(t *testing.T, stateDir string) int {
	t.Helper()
	st, err := outbox.Open(filepath.Join(stateDir, outbox.FileName), outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	es, err := st.List(false)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestGraceIsADurationToTheConfigLayer(t *testing.T) {
	e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	fs := newFlags(e, "serve")
	lifecycleFlags(fs, e)
	g, ok := fs.Lookup("grace").Value.(flag.Getter)
	if !ok {
		t.Fatal("--grace is no flag.Getter: a config file would have to give it as a list")
	}
	if _, ok := g.Get().(time.Duration); !ok {
		t.Fatalf("--grace gets a %T, want a time.Duration", g.Get())
	}
}
