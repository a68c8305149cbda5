package claude

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// The forgery: any local process could write idle notices, each surfaced
// as "Idle: <text>" and filling the router's queue. Only the notice asked
// for, from the socket asked, passes, once; the others are dropped and
// counted.
func TestOnlyTheIdleNoticeAskedForPassesAndOnlyOnce(t *testing.T) {
	r := startRig(t, Config{})
	target := listenSock(t, r.socks)
	other := listenSock(t, r.socks)
	sub, err := r.p.NotifyWhenIdle(testutil.Context(t, 10*time.Second), message.Session{Address: target.addr})
	if err != nil {
		t.Fatal(err)
	}
	notice := func(from *sock, id, detail string) []byte {
		return marshal(t, NewIdleNotice(from.addr, id, IdleStateIdle, 1, detail, "prompting"))
	}
	dial(t, r.p.SocketPath(),
		notice(target, uuid.NewString(), "never asked"),
		notice(other, sub, "asked of another socket"),
		notice(target, sub, "the answer"),
		notice(target, sub, "the answer again"))
	dial(t, r.p.SocketPath(), notice(target, uuid.NewString(), "sentinel")) // read after the first connection's lines
	idle, drops := 0, 0
	deadline := time.After(testutil.Patience)
	for !r.logs.has("idle notices nobody asked for dropped") || idle == 0 || drops == 0 {
		select {
		case ev := <-r.events:
			switch {
			case ev.Type == message.EventIdle:
				if ev.Idle.SubID != sub || ev.Idle.Detail != "the answer" {
					t.Fatalf("an idle notice passed that nobody asked for: %+v", ev.Idle)
				}
				idle++
			case ev.Type == message.EventDrop && ev.Drop.Reason == message.DropUnsolicited:
				drops++
			}
		case <-deadline:
			t.Fatalf("%d idle events and %d drops, want 1 and at least 1", idle, drops)
		}
	}
	time.Sleep(200 * time.Millisecond) // a second copy of the answer would have come by now
	for len(r.events) > 0 {
		if ev := <-r.events; ev.Type == message.EventIdle {
			t.Fatalf("idle notice passed twice or unasked: %+v", ev.Idle)
		}
	}
}
