package claude

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

func sendingPool(t *testing.T, script string, args ...string) *AliasPool {
	t.Helper()
	pool := NewAliasPool(PoolConfig{
		Command: func(n string) *exec.Cmd {
			return exec.Command("sh", append([]string{"-c", script, "sh", n}, args...)...)
		},
		MaxWorkers: 4,
		IdleAfter:  time.Hour,
	})
	t.Cleanup(pool.Close)
	return pool
}

// answer is what a Claude session's answer to alias name becomes.
func answer(t *testing.T, r *rig, name, id string) *message.Message {
	t.Helper()
	r.p.OnAliasEvent(name, message.Event{Type: message.EventMessage, Message: &message.Message{ID: id, From: "uds:/c/x.sock", Body: "answer"}})
	return r.next(t, func(ev message.Event) bool { return ev.Type == message.EventMessage && ev.Message.ID == id }).Message
}

// The leak: two sessions of one name had one alias, standing for whichever
// sorted last, so an answer to one went to the other (and a planted record
// of a victim's name received what was sent to the victim).
func TestTwoSessionsOfOneNameGetAliasesOfTheirOwnAndNoAnswerIsGuessed(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, Config{Name: "gw"})
	pool := sendingPool(t, sendingWorker)
	r.p.EnableAliases(pool)
	a := message.Session{Name: "dup", Address: "uds:/q/a.sock", SessionID: "qa", Protocol: message.ProtocolQwen}
	b := message.Session{Name: "dup", Address: "uds:/q/b.sock", SessionID: "qb", Protocol: message.ProtocolQwen}
	solo := message.Session{Name: "solo", Address: "uds:/q/s.sock", SessionID: "qs", Protocol: message.ProtocolQwen}
	if err := r.p.SyncAliases(ctx, []message.Session{a, b, solo}); err != nil {
		t.Fatal(err)
	}
	na, nb := "dup-"+addressing.Ref("qa"), "dup-"+addressing.Ref("qb")
	want := []string{na, nb, "solo"}
	slices.Sort(want)
	waitRunning(t, pool, want...)

	if _, err := r.p.SendAs(ctx, a, message.Message{ID: "m-out", To: "uds:/c/x.sock"}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, want...) // SendAs used a's alias, started no other
	for _, tc := range []struct {
		alias string
		want  message.Session
	}{{na, a}, {nb, b}, {"solo", solo}} {
		if m := answer(t, r, tc.alias, "m-"+tc.alias); m.AliasOf != tc.want.Address || m.ToSessionID != tc.want.SessionID || m.ToName != tc.alias {
			t.Fatalf("an answer to %s is for %q (%q, %q), want %q", tc.alias, m.AliasOf, m.ToSessionID, m.ToName, tc.want.Address)
		}
	}
	r.p.OnAliasEvent("dup", message.Event{Type: message.EventMessage, Message: &message.Message{ID: "m-dup", From: "uds:/c/x.sock", Body: "answer"}})
	if m := handedOn(t, r, "m-dup"); m != nil {
		t.Fatalf("a message to the shared name was handed on for %q: a guess, or the gateway itself", m.AliasOf)
	}
	var names []string
	for _, s := range r.p.Aliases() {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("aliases listed = %v", names)
	}
}

// gatedWorker is sendingWorker that says ready only once the file $2 exists.
const gatedWorker = `while [ ! -e "$2" ]; do sleep 0.01; done
` + sendingWorker

// The race: SendAs named its alias before the worker started, and a sync
// meanwhile gave that name to another session of the same name (or,
// finding no worker yet, forgot whom it stood for), so an answer to the
// sender went elsewhere.
func TestASyncWhileASendersAliasStartsKeepsItsNameForTheSender(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, Config{Name: "gw"})
	gate := filepath.Join(t.TempDir(), "go")
	pool := sendingPool(t, gatedWorker, gate)
	r.p.EnableAliases(pool)
	a := message.Session{Name: "dup", Address: "uds:/q/a.sock", SessionID: "qa", Protocol: message.ProtocolQwen}
	b := message.Session{Name: "dup", Address: "uds:/q/b.sock", SessionID: "qb", Protocol: message.ProtocolQwen}
	sent := make(chan error, 1)
	go func() {
		_, err := r.p.SendAs(ctx, a, message.Message{ID: "m-out", To: "uds:/c/x.sock"})
		sent <- err
	}()
	if !testutil.Within(testutil.Patience, func() bool { return pool.has("dup") }) {
		t.Fatal("the sender's alias did not start")
	}
	synced := make(chan error, 1)
	go func() { synced <- r.p.SyncAliases(ctx, []message.Session{b}) }()
	named := func() bool { // the sync named its aliases while a's worker starts
		r.p.bridge.mu.Lock()
		defer r.p.bridge.mu.Unlock()
		return len(r.p.bridge.byNm) > 0
	}
	if !testutil.Within(testutil.Patience, named) {
		t.Fatal("the sync named no alias")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if m := answer(t, r, "dup", "m-back"); m.AliasOf != a.Address {
		t.Fatalf("the answer to a's alias is for %q, want a (%q)", m.AliasOf, a.Address)
	}
	if m := answer(t, r, "dup-"+addressing.Ref("qb"), "m-b"); m.AliasOf != b.Address {
		t.Fatalf("b's alias stands for %q, want b", m.AliasOf)
	}
}
