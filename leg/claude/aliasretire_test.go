package claude

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// lingeringWorker says ready, writes each relay it is asked for to the file
// $2, and, told to stop, stops only once the file $3 exists: a worker that
// still hands on what it accepted while it stops.
const lingeringWorker = `printf '{"op":"ready","address":"uds:/nowhere/%s.sock","pid":%d}\n' "$1" $$ >&3
while IFS= read -r line <&3; do case $line in
*'"stop"'*) while [ ! -e "$3" ]; do sleep 0.01; done; exit 0;;
*'"relay"'*) printf '%s\n' "$line" >> "$2";;
esac; done`

// handedOn is the message with id the peer handed on, or nil when the
// marker came first: OnAliasEvent hands on in order.
func handedOn(t *testing.T, r *rig, id string) *message.Message {
	t.Helper()
	r.p.OnAliasEvent("solo", message.Event{Type: message.EventMessage, Message: &message.Message{ID: "marker-" + id, Body: "marker"}})
	ev := r.next(t, func(ev message.Event) bool {
		return ev.Type == message.EventMessage && (ev.Message.ID == id || ev.Message.ID == "marker-"+id)
	})
	if ev.Message.ID == id {
		return ev.Message
	}
	return nil
}

// The race: a sync that found a second session of an alias's name renamed
// the alias NAME-REF and forgot whom NAME stood for before its worker
// stopped, so a message the worker accepted meanwhile was handed on as a
// message to the gateway itself.
func TestAMessageReachingAnAliasAsItIsRenamedGoesToTheSessionItStoodFor(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, Config{Name: "gw"})
	dir := t.TempDir()
	relays, gate := filepath.Join(dir, "relays"), filepath.Join(dir, "go")
	pool := sendingPool(t, lingeringWorker, relays, gate)
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) }) // before the pool closes
	r.p.EnableAliases(pool)
	a := message.Session{Name: "work", Address: "uds:/q/a.sock", SessionID: "qa", Protocol: message.ProtocolQwen}
	b := message.Session{Name: "work", Address: "uds:/q/b.sock", SessionID: "qb", Protocol: message.ProtocolQwen}
	solo := message.Session{Name: "solo", Address: "uds:/q/s.sock", SessionID: "qs", Protocol: message.ProtocolQwen}
	if err := r.p.SyncAliases(ctx, []message.Session{a, solo}); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, "solo", "work")
	if err := r.p.SyncAliases(ctx, []message.Session{a, b, solo}); err != nil {
		t.Fatal(err)
	}
	// "work" is retired but its worker has not stopped: it still hands on
	// what a sender wrote to it just before.
	r.p.OnAliasEvent("work", message.Event{Type: message.EventMessage, Message: &message.Message{ID: "m-late", From: "uds:/c/x.sock", Body: "for a"}})
	m := handedOn(t, r, "m-late")
	if m == nil || m.AliasOf != a.Address || m.ToSessionID != a.SessionID || m.ToName != "work" {
		t.Fatalf("the message to the retiring alias was handed on as %+v, want it for a (%s, %s)", m, a.Address, a.SessionID)
	}
	// Once its worker stopped, the next sync forgets it.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	renamed := []string{"solo", "work-" + addressing.Ref("qa"), "work-" + addressing.Ref("qb")}
	slices.Sort(renamed)
	waitRunning(t, pool, renamed...)
	if err := r.p.SyncAliases(ctx, []message.Session{a, b, solo}); err != nil {
		t.Fatal(err)
	}
	r.p.bridge.mu.Lock()
	left := len(r.p.bridge.retired)
	r.p.bridge.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d retired aliases kept after their workers stopped", left)
	}
}

func TestAMessageToAnAliasThatStandsForNoSessionIsRefusedToItsSenderNotHandedToTheGateway(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, Config{Name: "gw"})
	dir := t.TempDir()
	relays, gate := filepath.Join(dir, "relays"), filepath.Join(dir, "go")
	if err := os.WriteFile(gate, nil, 0o600); err != nil { // workers stop when told
		t.Fatal(err)
	}
	pool := sendingPool(t, lingeringWorker, relays, gate)
	r.p.EnableAliases(pool)
	solo := message.Session{Name: "solo", Address: "uds:/q/s.sock", SessionID: "qs", Protocol: message.ProtocolQwen}
	if err := r.p.SyncAliases(ctx, []message.Session{solo}); err != nil {
		t.Fatal(err)
	}
	// A worker the bridge knows no session for (started for a sender it
	// has since forgotten, say).
	if _, err := pool.Get(ctx, "stray"); err != nil {
		t.Fatal(err)
	}
	r.p.OnAliasEvent("stray", message.Event{Type: message.EventMessage, Message: &message.Message{ID: "m-stray", From: "uds:/c/x.sock", Body: "hi"}})
	if m := handedOn(t, r, "m-stray"); m != nil {
		t.Fatalf("the message was handed on as %+v", m)
	}
	var rc WorkerOp
	if !testutil.Within(testutil.Patience, func() bool {
		b, _ := os.ReadFile(relays)
		return json.Unmarshal([]byte(strings.TrimSpace(string(b))), &rc) == nil
	}) {
		t.Fatal("the sender was told nothing")
	}
	if rc.Receipt == nil || rc.Receipt.MsgID != "m-stray" || rc.Receipt.Status != message.StatusFailed || !strings.Contains(rc.Receipt.Reason, `"stray" stands for no session`) {
		t.Fatalf("the sender was told %+v", rc.Receipt)
	}
}
