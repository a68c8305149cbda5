package claude

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// shellWorker is an alias worker that registers nowhere: it says ready on
// its control pipe (fd 3) and exits when told to stop or when the pipe
// closes. The pool cannot tell it from the real one.
const shellWorker = `printf '{"op":"ready","address":"uds:/nowhere/%s.sock","pid":%d}\n' "$1" $$ >&3
while IFS= read -r line <&3; do case $line in *'"stop"'*) exit 0;; esac; done`

func shellPool(t *testing.T, maxWorkers int) *AliasPool {
	t.Helper()
	pool := NewAliasPool(PoolConfig{
		Command:    func(name string) *exec.Cmd { return exec.Command("sh", "-c", shellWorker, "sh", name) },
		MaxWorkers: maxWorkers,
		IdleAfter:  time.Hour,
	})
	t.Cleanup(pool.Close)
	return pool
}

func running(pool *AliasPool) []string {
	var out []string
	for _, a := range pool.Aliases() {
		out = append(out, a.Name)
	}
	slices.Sort(out)
	return out
}

func waitRunning(t *testing.T, pool *AliasPool, want ...string) {
	t.Helper()
	if !testutil.Within(testutil.Patience, func() bool { return slices.Equal(running(pool), want) }) {
		t.Fatalf("aliases running = %v, want %v", running(pool), want)
	}
}

func TestAliasPoolRefusesANewAliasBeyondItsCap(t *testing.T) {
	ctx := context.Background()
	pool := shellPool(t, 2)
	for _, name := range []string{"a", "b"} {
		if _, err := pool.Get(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	_, err := pool.Get(ctx, "c")
	var le *LimitError
	if !errors.Is(err, ErrAliasLimit) || !errors.As(err, &le) || le.Name != "c" || le.Max != 2 || le.DropReason() != message.DropAliasLimit {
		t.Fatalf("Get beyond the cap = %v, want a LimitError for c at 2", err)
	}
	if err := pool.Send(ctx, "c", message.Message{ID: "m1"}); !errors.Is(err, ErrAliasLimit) {
		t.Fatalf("Send from an alias beyond the cap = %v, want ErrAliasLimit", err)
	}
	if _, err := pool.Get(ctx, "a"); err != nil {
		t.Fatalf("an alias already running is not new: %v", err)
	}
	refused, err := pool.Publish(ctx, map[string]bool{"a": true, "d": true, "e": true})
	if err != nil || !slices.Equal(refused, []string{"d", "e"}) {
		t.Fatalf("Publish at the cap refused %v, %v; want d and e", refused, err)
	}
	waitRunning(t, pool, "a", "b")
}

func TestAliasPoolStopsWhatItPublishedOnceTheSessionLeaves(t *testing.T) {
	ctx := context.Background()
	pool := shellPool(t, 8)
	if _, err := pool.Publish(ctx, map[string]bool{"x": true, "y": true}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, "x", "y")
	// Listed once, then gone at the next sync: the workers the sync started
	// go with their sessions, without waiting out the idle timer.
	if _, err := pool.Publish(ctx, map[string]bool{"y": true}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, "y")
	if _, err := pool.Get(ctx, "on-demand"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Publish(ctx, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, "on-demand") // never published: retired once idle, not now
}

func TestAliasSyncRetiresWorkersAndReportsRefusalsOnce(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, Config{Name: "gw"})
	pool := shellPool(t, 2)
	r.p.EnableAliases(pool)
	qwen := func(names ...string) []message.Session {
		var out []message.Session
		for _, n := range names {
			out = append(out, message.Session{Name: n, Address: "uds:/q/" + n + ".sock", Protocol: message.ProtocolQwen})
		}
		return out
	}
	isAliasLimit := func(ev message.Event) bool {
		return ev.Type == message.EventDrop && ev.Drop.Reason == message.DropAliasLimit
	}
	if err := r.p.SyncAliases(ctx, qwen("q1", "q2", "q3")); err != nil {
		t.Fatalf("a refusal at the cap is no sync error: %v", err)
	}
	waitRunning(t, pool, "q1", "q2")
	if ev := r.next(t, isAliasLimit); ev.Drop.From != "uds:/q/q3.sock" || ev.Drop.MsgID != "" {
		t.Fatalf("drop = %+v, want q3's alias", ev.Drop)
	}
	if !r.logs.has("alias refused") {
		t.Fatal("the refusal was not logged")
	}

	t.Run("a refused sender's message is turned away with the reason", func(t *testing.T) {
		_, err := r.p.SendAs(ctx, qwen("q3")[0], message.Message{ID: "m-q3", To: "uds:/c/x.sock"})
		var dr interface{ DropReason() message.DropReason }
		if !errors.As(err, &dr) || dr.DropReason() != message.DropAliasLimit {
			t.Fatalf("SendAs from a refused alias = %v, want a drop with alias-limit", err)
		}
		if ev := r.next(t, isAliasLimit); ev.Drop.MsgID != "m-q3" {
			t.Fatalf("drop = %+v, want m-q3", ev.Drop)
		}
	})

	t.Run("a session that stays refused is not reported again", func(t *testing.T) {
		if err := r.p.SyncAliases(ctx, qwen("q1", "q2", "q3")); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-r.events:
			if isAliasLimit(ev) {
				t.Fatalf("refusal reported again: %+v", ev.Drop)
			}
		case <-time.After(100 * time.Millisecond):
		}
	})

	t.Run("workers go with their sessions and free their slots", func(t *testing.T) {
		if err := r.p.SyncAliases(ctx, qwen("q3")); err != nil {
			t.Fatal(err)
		}
		// q1 and q2 stop; q3 gets a slot once they have gone.
		if !testutil.Within(testutil.Patience, func() bool { n := running(pool); return !slices.Contains(n, "q1") && !slices.Contains(n, "q2") }) {
			t.Fatalf("aliases running = %v after their sessions left", running(pool))
		}
		if err := r.p.SyncAliases(ctx, qwen("q3")); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, pool, "q3")
		if err := r.p.SyncAliases(ctx, nil); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, pool)
	})
}

// The leak: a worker the sync started, whose session left before the next
// sync, stayed until the idle timer (10 minutes) because only a later sync
// marked it published.
func TestAnAliasListedForOneSyncGoesAtTheNext(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, Config{Name: "gw"})
	pool := shellPool(t, 8)
	r.p.EnableAliases(pool)
	brief := []message.Session{{Name: "brief", Address: "uds:/q/brief.sock", Protocol: message.ProtocolQwen}}
	if err := r.p.SyncAliases(ctx, brief); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, "brief")
	if err := r.p.SyncAliases(ctx, nil); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool)
}

// A session whose name the registry would refuse (too long: another
// host's NAME.HOST can be) gets no alias, rather than a worker started at
// every sync that can never register.
func TestASessionNamedBeyondTheRegistrysRulesGetsNoAlias(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, Config{Name: "gw"})
	pool := shellPool(t, 8)
	r.p.EnableAliases(pool)
	long := strings.Repeat("n", MaxNameRunes-1) + ".ci"
	ss := []message.Session{
		{Name: long, Address: long[:8] + "@ci", Protocol: message.ProtocolFederation},
		{Name: "build.ci", Address: "build@ci", Protocol: message.ProtocolFederation},
	}
	if err := r.p.SyncAliases(ctx, ss); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, "build.ci")
}

// sendingWorker is shellWorker that also answers every send as written,
// for the one message id the test sends.
const sendingWorker = `printf '{"op":"ready","address":"uds:/nowhere/%s.sock","pid":%d}\n' "$1" $$ >&3
while IFS= read -r line <&3; do case $line in *'"stop"'*) exit 0;; *'"send"'*) printf '{"op":"sent","msg_id":"m-out"}\n' >&3;; esac; done`

// The loss: an alias started on demand to send as a session no sync had
// listed yet knew nothing of that session, so an answer to it that came
// before the next sync (2 s) went to the gateway itself and was lost.
func TestAnAnswerToAnAliasStartedForASenderReachesTheSenderBeforeAnySync(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, Config{Name: "gw"})
	pool := NewAliasPool(PoolConfig{
		Command:    func(name string) *exec.Cmd { return exec.Command("sh", "-c", sendingWorker, "sh", name) },
		MaxWorkers: 4,
		IdleAfter:  time.Hour,
	})
	t.Cleanup(pool.Close)
	r.p.EnableAliases(pool)
	sender := message.Session{Name: "mcp-agent", Address: "mcp:mcp-agent", Protocol: message.ProtocolMCP}
	if _, err := r.p.SendAs(ctx, sender, message.Message{ID: "m-out", To: "uds:/c/x.sock"}); err != nil {
		t.Fatal(err)
	}
	r.p.OnAliasEvent("mcp-agent", message.Event{Type: message.EventMessage, Message: &message.Message{ID: "m-back", From: "uds:/c/x.sock", Body: "answer"}})
	ev := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventMessage && ev.Message.ID == "m-back" })
	if ev.Message.AliasOf != sender.Address || ev.Message.ToName != sender.Name {
		t.Fatalf("the answer is for %q (%q), want the sender %q (%q)", ev.Message.AliasOf, ev.Message.ToName, sender.Address, sender.Name)
	}
}
