package claudebg_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/claudebg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakedaemon"
)

// configDir is a fresh config dir whose daemon socket directory is
// removed at cleanup (the socket lives under /tmp/cc-daemon-<uid>).
func configDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sock, err := claudebg.SocketPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(sock)) })
	return dir
}

// logs is a logger whose lines a test reads.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type rig struct {
	l      *claudebg.Leg
	d      *fakedaemon.Daemon // nil when no daemon runs
	config string
	events chan message.Event
	logs   *logs
}

// newLeg is a leg for config, not running.
func newLeg(t *testing.T, config string) (*claudebg.Leg, *logs) {
	t.Helper()
	return newLegWith(t, claudebg.Config{ConfigDir: config, OutputEvery: time.Nanosecond})
}

// newLegWith is a leg of cfg, polling every 20 ms, logging to what it
// returns.
func newLegWith(t *testing.T, cfg claudebg.Config) (*claudebg.Leg, *logs) {
	t.Helper()
	lg := &logs{}
	cfg.PollEvery = 20 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(lg, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l, err := claudebg.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l, lg
}

// start runs a stand-in daemon where the real one of a fresh config dir
// would listen, and a leg for that config dir; run says whether the
// leg's Run runs.
func start(t *testing.T, o fakedaemon.Options, run bool) *rig {
	t.Helper()
	o.ConfigDir = configDir(t)
	d := fakedaemon.Start(t, o)
	l, lg := newLeg(t, o.ConfigDir)
	r := &rig{l: l, d: d, config: o.ConfigDir, events: make(chan message.Event, 1024), logs: lg}
	if run {
		running(t, l, r.events)
	}
	return r
}

func running(t *testing.T, l *claudebg.Leg, in chan message.Event) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
}

// next is the next event of the agent at address with this kind whose
// text has want.
func (r *rig) next(t *testing.T, address, kind, want string) message.Event {
	t.Helper()
	return r.wait(t, kind+" event of "+address+" with "+want, func(ev message.Event) bool {
		return ev.Type == message.EventRemote && ev.Remote.Address == address && ev.Remote.Kind == kind && strings.Contains(ev.Remote.Text, want)
	})
}

// wait is the next event that matches, skipping others.
func (r *rig) wait(t *testing.T, what string, match func(message.Event) bool) message.Event {
	t.Helper()
	timeout := time.After(testutil.Patience)
	for {
		select {
		case ev := <-r.events:
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s within %v", what, testutil.Patience)
		}
	}
}

func sessions(t *testing.T, l *claudebg.Leg) []message.Session {
	t.Helper()
	ss, err := l.Sessions(testutil.Context(t, testutil.Patience))
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

func TestTheLegKeepsTheLegContract(t *testing.T) {
	legtest.Run(t, func(t *testing.T) legtest.Subject {
		r := start(t, fakedaemon.Options{}, false)
		job := r.d.AddJob(fakedaemon.Record{Cwd: t.TempDir(), Name: "contract"})
		return legtest.Subject{Leg: r.l, Unknown: claudebg.AddressPrefix + "00000000",
			Foreign: []string{"github.com/sessiongateway/gateway/testkit/fakedaemon"},
			Inbound: func(t *testing.T) {
				if err := r.d.Stream(job.Short, "hello from the agent"); err != nil {
					t.Fatal(err)
				}
			}}
	})
}

func TestTheDaemonsAgentsAreListedAsSessions(t *testing.T) {
	r := start(t, fakedaemon.Options{}, false)
	cwd := t.TempDir()
	named := r.d.AddJob(fakedaemon.Record{Cwd: cwd, Name: "pong from fake", Intent: "say hi", Tempo: "idle"})
	unnamed := r.d.AddJob(fakedaemon.Record{Cwd: cwd, Intent: "fix\nthe build", Tempo: "active"})
	ended := r.d.AddJob(fakedaemon.Record{Cwd: cwd, Name: "done one"})
	if err := r.d.Settle(ended.Short, "done"); err != nil {
		t.Fatal(err)
	}
	got := map[string]message.Session{}
	for _, s := range sessions(t, r.l) {
		got[s.Address] = s
	}
	tests := []struct {
		name      string
		job       fakedaemon.Record
		wantName  string
		status    string
		reachable bool
	}{
		{"an agent is listed by its name, its status its tempo", named, "pong from fake", "idle", true},
		{"an agent with no name is listed by its intent on one line", unnamed, "fix the build", "active", true},
		{"a settled agent is listed with its outcome, not reachable", ended, "done one", "done", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := got[claudebg.AddressPrefix+tt.job.Short]
			if !ok {
				t.Fatalf("%s not listed: %v", tt.job.Short, got)
			}
			if s.Name != tt.wantName || s.Status != tt.status || s.Reachable != tt.reachable || s.Kind != claudebg.KindBackground ||
				s.Cwd != cwd || s.SessionID != tt.job.SessionID || s.Protocol != message.ProtocolClaudeBG || s.NativeRef != tt.job.Short || s.PID != tt.job.PID {
				t.Fatalf("listed as %+v", s)
			}
			if a, err := addressing.Parse(s.Address); err != nil || a.Kind != addressing.KindName {
				t.Fatalf("address %q parses as %+v, %v; want a name", s.Address, a, err)
			}
		})
	}
}

func TestNoDaemonIsNoSessionsAndNothingLogged(t *testing.T) {
	l, lg := newLeg(t, configDir(t))
	events := make(chan message.Event, 16)
	running(t, l, events)
	for i := 0; i < 3; i++ {
		if ss := sessions(t, l); len(ss) != 0 {
			t.Fatalf("sessions with no daemon: %v", ss)
		}
	}
	rc, err := l.Send(context.Background(), message.Message{ID: "m1", To: claudebg.AddressPrefix + "964dbf81", Body: "hi"})
	if err != nil || rc.Status != message.StatusFailed || !strings.Contains(rc.Reason, "control key") && !strings.Contains(rc.Reason, "no Claude Code") {
		t.Fatalf("send with no daemon: %+v %v", rc, err)
	}
	if s := lg.String(); strings.Contains(s, "WARN") || strings.Contains(s, "ERROR") {
		t.Fatalf("no daemon was logged:\n%s", s)
	}
}

func TestADaemonOfAnotherVersionIsAClearErrorLoggedOnce(t *testing.T) {
	r := start(t, fakedaemon.Options{Proto: 2}, true)
	r.d.AddJob(fakedaemon.Record{Name: "unseen"})
	_, err := r.l.Sessions(context.Background())
	var pe *claudebg.ProtoError
	if !errors.As(err, &pe) || pe.ServerProto != "2" || !strings.Contains(err.Error(), "control protocol 2 (Claude Code 2.1.332); the gateway speaks 1") {
		t.Fatalf("Sessions of a version-2 daemon: %v", err)
	}
	// Run polls every 20 ms: many polls, one line.
	if !testutil.Within(testutil.Patience, func() bool { return r.l.Stats().Errors >= 5 }) {
		t.Fatalf("Run did not keep polling: %+v", r.l.Stats())
	}
	if n := strings.Count(r.logs.String(), "control protocol 2"); n != 1 {
		t.Fatalf("the version error was logged %d times, want once:\n%s", n, r.logs.String())
	}
	if len(r.d.Replies()) != 0 || len(r.d.Dispatches()) != 0 {
		t.Fatal("the leg sent work to a daemon it does not speak to")
	}
}

func TestASocketDirectoryOthersCanEnterIsNotUsed(t *testing.T) {
	r := start(t, fakedaemon.Options{}, false)
	r.d.AddJob(fakedaemon.Record{})
	dir := filepath.Dir(r.l.SocketPath())
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.l.Sessions(context.Background()); err == nil || !strings.Contains(err.Error(), "not 0700") {
		t.Fatalf("Sessions through a 0755 socket dir: %v", err)
	}
}

func TestAControlSocketThatIsASymlinkIsNotUsed(t *testing.T) {
	r := start(t, fakedaemon.Options{}, false)
	r.d.AddJob(fakedaemon.Record{})
	other, _ := newLeg(t, configDir(t))
	dir := filepath.Dir(other.SocketPath())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(r.l.SocketPath(), other.SocketPath()); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Sessions(context.Background()); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Sessions through a symlinked socket: %v", err)
	}
}

func TestAnAgentsOutputIsStreamedAsTextWithoutEscapes(t *testing.T) {
	r := start(t, fakedaemon.Options{}, false)
	job := r.d.AddJob(fakedaemon.Record{Name: "streamer", Detail: "pong from fake"})
	if err := r.d.Stream(job.Short, "\x1b[1mbefore the gateway came\x1b[0m"); err != nil {
		t.Fatal(err)
	}
	running(t, r.l, r.events)
	addr := claudebg.AddressPrefix + job.Short
	r.next(t, addr, claudebg.KindState, "idle: pong from fake")
	r.next(t, addr, claudebg.KindTerminal, "before the gateway came")
	if err := r.d.Stream(job.Short, "\x1b[2K\x1b[1G❯ third turn please\x1b[K"); err != nil {
		t.Fatal(err)
	}
	ev := r.next(t, addr, claudebg.KindTerminal, "third turn")
	if ev.Remote.Text != "❯ third turn please" || ev.Leg != message.ProtocolClaudeBG || ev.Remote.SessionID != job.SessionID {
		t.Fatalf("output event %+v %+v", ev, ev.Remote)
	}
	if err := r.d.Patch(job.Short, map[string]any{"tempo": "active", "detail": "third turn please"}); err != nil {
		t.Fatal(err)
	}
	r.next(t, addr, claudebg.KindState, "active: third turn please")
	if err := r.d.Settle(job.Short, "done"); err != nil {
		t.Fatal(err)
	}
	r.next(t, addr, claudebg.KindSettled, "done")
}

func TestOutputIsBoundedPerEventAndATooLongFrameIsDroppedCounted(t *testing.T) {
	r := start(t, fakedaemon.Options{}, true)
	job := r.d.AddJob(fakedaemon.Record{Name: "chatty"})
	addr := claudebg.AddressPrefix + job.Short
	r.next(t, addr, claudebg.KindState, "idle")
	if err := r.d.Stream(job.Short, strings.Repeat("é", 3*claudebg.MaxEventText)); err != nil {
		t.Fatal(err)
	}
	total := 0
	for total < 3*claudebg.MaxEventText {
		ev := r.next(t, addr, claudebg.KindTerminal, "é")
		n := len([]rune(ev.Remote.Text))
		if n > claudebg.MaxEventText {
			t.Fatalf("an event of %d runes, over %d", n, claudebg.MaxEventText)
		}
		total += n
	}
	// A frame over 1 MiB (escaped into JSON) is dropped; the stream goes on.
	if err := r.d.Stream(job.Short, strings.Repeat("\x01", claudebg.MaxLine/6+1)); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Stream(job.Short, "after the big one"); err != nil {
		t.Fatal(err)
	}
	r.next(t, addr, claudebg.KindTerminal, "after the big one")
	if r.l.Stats().Dropped != 1 {
		t.Fatalf("stats %+v, want one drop", r.l.Stats())
	}
}

func TestAMessageToAnAgentIsItsNextPrompt(t *testing.T) {
	r := start(t, fakedaemon.Options{}, true)
	job := r.d.AddJob(fakedaemon.Record{Name: "replied"})
	addr := claudebg.AddressPrefix + job.Short
	r.next(t, addr, claudebg.KindState, "idle") // Run is handing events on
	rc, err := r.l.Send(context.Background(), message.Message{ID: "m1", To: addr, Body: "third turn please"})
	if err != nil || rc.Status != message.StatusSent || rc.MsgID != "m1" {
		t.Fatalf("send: %+v %v", rc, err)
	}
	if got := r.d.Replies(); len(got) != 1 || got[0].Text != "third turn please" || got[0].Short != job.Short {
		t.Fatalf("the daemon got %+v", got)
	}
	if strings.Contains(r.logs.String(), r.d.Key()) {
		t.Fatal("the control key was logged")
	}
	// The daemon's patch of the turn may come before its answer, so
	// before the receipt: either order.
	var receipt *message.Receipt
	turn := false
	r.wait(t, "the receipt of m1 and the turn's state", func(ev message.Event) bool {
		if ev.Type == message.EventReceipt && ev.Receipt.MsgID == "m1" {
			receipt = ev.Receipt
		}
		turn = turn || ev.Type == message.EventRemote && ev.Remote.Kind == claudebg.KindState && ev.Remote.Text == "active: third turn please"
		return receipt != nil && turn
	})
	if receipt.Status != message.StatusDelivered {
		t.Fatalf("receipt %+v", receipt)
	}
}

func TestASendTheDaemonCannotTakeIsAFailedReceiptSayingWhy(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, r *rig)
		body  string
		to    string
		want  string
	}{
		{"without the control key it says so", func(t *testing.T, r *rig) {
			if err := os.Remove(filepath.Join(r.config, "daemon", "control.key")); err != nil {
				t.Fatal(err)
			}
		}, "hi", "", "no control key"},
		{"a key others can read is not used", func(t *testing.T, r *rig) {
			if err := os.Chmod(filepath.Join(r.config, "daemon", "control.key"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "hi", "", "no control key"},
		{"a key the daemon does not hold is refused after one fresh read", func(t *testing.T, r *rig) {
			if err := os.WriteFile(filepath.Join(r.config, "daemon", "control.key"), []byte("0123456789abcdef0123456789abcdef"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "hi", "", "refused the key"},
		{"an agent that ended has ended", nil, "hi", claudebg.AddressPrefix + "00000000", "has ended"},
		{"an empty message is refused before the daemon", nil, "  ", "", "empty"},
		{"a message over the cap is refused before the daemon", nil, strings.Repeat("x", claudebg.MaxReplyText+1), "", "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, fakedaemon.Options{}, false)
			job := r.d.AddJob(fakedaemon.Record{})
			if tt.setup != nil {
				tt.setup(t, r)
			}
			to := tt.to
			if to == "" {
				to = claudebg.AddressPrefix + job.Short
			}
			rc, err := r.l.Send(context.Background(), message.Message{ID: "m1", To: to, Body: tt.body})
			if err != nil || rc.Status != message.StatusFailed || !strings.Contains(rc.Reason, tt.want) {
				t.Fatalf("send: %+v %v; want failed with %q", rc, err, tt.want)
			}
			if len(r.d.Replies()) != 0 {
				t.Fatalf("the daemon took %v", r.d.Replies())
			}
			if strings.Contains(r.logs.String(), r.d.Key()) || strings.Contains(rc.Reason, r.d.Key()) {
				t.Fatal("the control key was logged or reported")
			}
		})
	}
}

func TestAKeyRewrittenByARestartedDaemonIsReadAgain(t *testing.T) {
	r := start(t, fakedaemon.Options{}, false)
	job := r.d.AddJob(fakedaemon.Record{})
	send := func() message.Receipt {
		rc, err := r.l.Send(context.Background(), message.Message{ID: "m", To: claudebg.AddressPrefix + job.Short, Body: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	if rc := send(); rc.Status != message.StatusSent {
		t.Fatalf("first send %+v", rc)
	}
	// Another daemon in the same place, with a key of its own.
	r.d.Close()
	d2 := fakedaemon.Start(t, fakedaemon.Options{ConfigDir: r.config})
	job2 := d2.AddJob(fakedaemon.Record{Short: job.Short})
	if rc := send(); rc.Status != message.StatusSent || len(d2.Replies()) != 1 || d2.Replies()[0].Short != job2.Short {
		t.Fatalf("send to the restarted daemon %+v, replies %v", rc, d2.Replies())
	}
}

func TestStopEndsAnAgent(t *testing.T) {
	r := start(t, fakedaemon.Options{}, false)
	job := r.d.AddJob(fakedaemon.Record{})
	target := message.Session{Address: claudebg.AddressPrefix + job.Short}
	if err := r.l.Stop(context.Background(), target); err != nil {
		t.Fatal(err)
	}
	if ss := sessions(t, r.l); len(ss) != 0 {
		t.Fatalf("listed after stop: %v", ss)
	}
	var nf *addressing.NotFoundError
	if err := r.l.Stop(context.Background(), target); !errors.As(err, &nf) {
		t.Fatalf("stopping it again: %v, want not found", err)
	}
}

func TestDispatchHandsTheDaemonNewWork(t *testing.T) {
	r := start(t, fakedaemon.Options{}, true)
	cwd := t.TempDir()
	s, err := r.l.Dispatch(context.Background(), "write the tests", cwd)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Address, claudebg.AddressPrefix) || s.Cwd != cwd || s.Kind != claudebg.KindBackground {
		t.Fatalf("dispatched %+v", s)
	}
	ds := r.d.Dispatches()
	if len(ds) != 1 || !bytes.Contains(ds[0], []byte(`"write the tests"`)) || !bytes.Contains(ds[0], []byte(`"env":{}`)) {
		t.Fatalf("the daemon got %s", ds)
	}
	found := false
	for _, x := range sessions(t, r.l) {
		found = found || x.Address == s.Address && x.Reachable
	}
	if !found {
		t.Fatalf("%s not listed", s.Address)
	}
	r.next(t, s.Address, claudebg.KindState, "active") // followed at once
	for _, bad := range []struct{ text, cwd string }{{"", cwd}, {"x", filepath.Join(cwd, "missing")}} {
		if _, err := r.l.Dispatch(context.Background(), bad.text, bad.cwd); !errors.Is(err, message.ErrBadStart) {
			t.Errorf("Dispatch(%q, %q) = %v, want ErrBadStart", bad.text, bad.cwd, err)
		}
	}
	if err := os.Remove(filepath.Join(r.config, "daemon", "control.key")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.l.Dispatch(context.Background(), "x", cwd); !errors.Is(err, claudebg.ErrNoKey) {
		t.Errorf("Dispatch without the key = %v, want ErrNoKey", err)
	}
}

func TestOutputBetweenTwoEventsIsGatheredIntoTheNext(t *testing.T) {
	r := start(t, fakedaemon.Options{}, false)
	job := r.d.AddJob(fakedaemon.Record{Name: "spinner"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.d.Stream(job.Short, "first"))
	r.l, _ = newLegWith(t, claudebg.Config{ConfigDir: r.config, OutputEvery: time.Hour})
	running(t, r.l, r.events)
	addr := claudebg.AddressPrefix + job.Short
	r.next(t, addr, claudebg.KindTerminal, "first") // the replay is shown at once
	for _, frame := range []string{"✶", "✻", "✢ Thinking…"} {
		must(r.d.Stream(job.Short, frame))
	}
	must(r.d.Patch(job.Short, map[string]any{"tempo": "active"}))
	var got []string
	r.wait(t, "the state change", func(ev message.Event) bool {
		if ev.Remote != nil && ev.Remote.Kind == claudebg.KindTerminal {
			got = append(got, ev.Remote.Text)
		}
		return ev.Remote != nil && ev.Remote.Kind == claudebg.KindState && ev.Remote.Text == "active"
	})
	if len(got) != 1 || got[0] != "✶\n✻\n✢ Thinking…" {
		t.Fatalf("output events before the state change %q, want the three writes in one", got)
	}
}

func TestPastMaxFollowedAnAgentIsListedButNotFollowed(t *testing.T) {
	r := start(t, fakedaemon.Options{}, false)
	a := r.d.AddJob(fakedaemon.Record{Name: "a"})
	b := r.d.AddJob(fakedaemon.Record{Name: "b"})
	r.l, _ = newLegWith(t, claudebg.Config{ConfigDir: r.config, MaxFollowed: 1, OutputEvery: time.Nanosecond})
	running(t, r.l, r.events)
	first := r.wait(t, "a state event", func(ev message.Event) bool { return ev.Remote != nil && ev.Remote.Kind == claudebg.KindState })
	if !testutil.Within(testutil.Patience, func() bool { return r.l.Stats().Unfollowed >= 3 }) {
		t.Fatalf("stats %+v, want the second agent counted unfollowed at each poll", r.l.Stats())
	}
	// The one not followed speaks first: were it followed, its output
	// would come first.
	other, followed := a, b
	if first.Remote.Address == claudebg.AddressPrefix+a.Short {
		other, followed = b, a
	}
	for _, job := range []fakedaemon.Record{other, followed} {
		if err := r.d.Stream(job.Short, "from "+job.Name); err != nil {
			t.Fatal(err)
		}
	}
	ev := r.wait(t, "a terminal event", func(ev message.Event) bool { return ev.Remote != nil && ev.Remote.Kind == claudebg.KindTerminal })
	if ev.Remote.Address != first.Remote.Address {
		t.Fatalf("output of %s, which is not the one followed (%s)", ev.Remote.Address, first.Remote.Address)
	}
	if len(sessions(t, r.l)) != 2 {
		t.Fatal("an agent not followed is not listed")
	}
}
