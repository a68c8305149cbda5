package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/router"
)

// Two sessions that each send whatever reaches them straight back to the
// other's alias, keeping the hop chain they got, as a relaying agent would:
// the chain crosses the Claude envelope, an alias worker, the bridge and the
// Qwen frame each time, and the bridge's guard stops the bounce.
//
// In process: the test checks the chain for this process's router.HopToken.
func TestAForwardingLoopThroughRealAliasesIsStoppedByTheHopGuard(t *testing.T) {
	g := startGateway(t, t.TempDir())
	events := collect(t, g)
	fk := newFake(t, g, "work-08", message.ModePrompting)
	q := newQwenPeer(t, g, "qwen-work", message.ModePrompting)
	toQwen := claudeAlias(t, g, "qwen-work") // the Qwen session's alias on the Claude leg
	toClaude := qwenAlias(t, q, "work-08")   // the Claude session's alias on the Qwen leg
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Bodies differ, or each receiver would drop a repeat as a duplicate
	// before the hop guard had its say.
	claudeSend := func(i int, chain []string) string {
		t.Helper()
		id := uuid.NewString()
		env := claude.Envelope{From: fk.Address(), FromSession: fk.SessionID(), FromName: "work-08",
			FromMode: "prompting", HopChain: chain, Body: fmt.Sprint("bounce ", i)}
		if err := fk.SendFrame(ctx, toQwen, claude.NewUserFrame(fk.Address(), id, env, nil)); err != nil {
			t.Fatal(err)
		}
		return id
	}
	// next waits for bounce i to reach a session, or for the gateway to
	// drop it; it returns the chain bounce i arrived with.
	next := func(i int, atQwen bool) (chain []string, drop *message.Drop) {
		t.Helper()
		body := fmt.Sprint("bounce ", i)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case ev := <-events:
				if ev.Type == message.EventDrop {
					return nil, ev.Drop
				}
			case ev := <-q.events:
				if atQwen && ev.Type == message.EventMessage && ev.Message.Body == body {
					return ev.Message.HopChain, nil
				}
			case <-tick.C:
				if atQwen {
					continue
				}
				for _, r := range fk.Received() {
					if r.Content.Envelope.Body == body {
						return r.Content.Envelope.HopChain, nil
					}
				}
			case <-ctx.Done():
				t.Fatalf("bounce %d reached no one and was not dropped", i)
			}
		}
	}

	lastID := claudeSend(0, nil)
	forwards := 0
	var drop *message.Drop
	for i := 0; drop == nil; i++ {
		atQwen := i%2 == 0
		var chain []string
		chain, drop = next(i, atQwen)
		if drop != nil {
			break
		}
		forwards++
		if !slices.Contains(chain, router.HopToken()) {
			t.Fatalf("bounce %d arrived with chain %q, without the gateway's token", i, chain)
		}
		if atQwen {
			if _, err := q.Send(ctx, message.Message{ID: uuid.NewString(), To: toClaude.Address, ToSessionID: toClaude.SessionID,
				Body: fmt.Sprint("bounce ", i+1), Mode: message.ModePrompting, HopChain: chain}); err != nil {
				t.Fatal(err)
			}
		} else {
			lastID = claudeSend(i+1, chain)
		}
		if forwards > 3*router.MaxSelfHops {
			t.Fatalf("still bouncing after %d forwards", forwards)
		}
	}
	if forwards != router.MaxSelfHops {
		t.Fatalf("the bridge forwarded %d times before stopping, want %d", forwards, router.MaxSelfHops)
	}
	if drop.Reason != message.DropHopLoop {
		t.Fatalf("dropped with %q, want hop-loop", drop.Reason)
	}
	// Ten forwards alternate, so the eleventh bounce came from the Claude
	// side, which hears why in its own vocabulary.
	f, err := fk.WaitControl(ctx, func(f claude.Frame) bool {
		return f.Status == claude.WireDropped && f.OrigMsgID == lastID
	})
	if err != nil {
		t.Fatalf("the Claude sender got no dropped receipt for %s: %v", lastID, err)
	}
	if f.DropReason != "hop-loop" {
		t.Fatalf("drop_reason %q, want hop-loop", f.DropReason)
	}
	var counted float64
	for _, m := range scrape(t, g)["gateway_drops_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "reason" && l.GetValue() == "hop-loop" {
				counted += m.GetCounter().GetValue()
			}
		}
	}
	if counted != 1 {
		t.Fatalf("drops counted with reason hop-loop = %v, want 1", counted)
	}
}
