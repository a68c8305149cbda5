package claude

import (
	"context"
	fp "path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// stuckPeer registers a peer whose router never reads (an unbuffered
// channel nobody receives from) and returns it with the stop of its Run.
func stuckPeer(t *testing.T, cfg Config) (*Leg, func()) {
	t.Helper()
	cfg.RuntimeDir, cfg.ConfigDir = testutil.ShortTempDir(t), t.TempDir()
	p, err := Register(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx, make(chan message.Event)) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	if !testutil.Within(testutil.Patience, func() bool { return p.Ready() == nil }) {
		t.Fatal("peer never became ready")
	}
	return p, stop
}

// The loss: a message accepted while the router did not take it, then
// dropped as the session stopped, left its sender no receipt, which a
// Claude Code sender reads as delivered.
func TestAMessageNeverHandedOnEndsExpired(t *testing.T) {
	p, stop := stuckPeer(t, Config{Name: "stuck"})
	sender := listenSock(t, sockDir(p))
	id, b := sender.userFrame(t, "prompting", "accepted, then the session stops")
	dial(t, p.SocketPath(), b)
	time.Sleep(100 * time.Millisecond) // let the connection reach the stuck hand-over
	stop()
	sender.waitFrame(t, func(f Frame) bool { return f.OrigMsgID == id && f.Status == WireExpired })
}

// The lie: releasing a held message said "delivered" to its sender before
// handing it on, and the hand-over, bound to the operator's request, could
// then fail and lose it.
func TestAReleasedMessageNotHandedOnIsNotReportedDelivered(t *testing.T) {
	p, _ := stuckPeer(t, Config{Name: "stuck", Inbound: PolicyHold})
	sender := listenSock(t, sockDir(p))
	id, b := sender.userFrame(t, "prompting", "held, then released into a stuck router")
	dial(t, p.SocketPath(), b)
	sender.waitFrame(t, func(f Frame) bool { return f.OrigMsgID == id && f.Status == WireHeld })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := p.Decide(ctx, id, true, ""); err == nil {
		t.Fatal("a release the router never took reported success")
	}
	f := sender.waitFrame(t, func(f Frame) bool {
		return f.OrigMsgID == id && (f.Status == WireExpired || f.Status == WireDelivered)
	})
	if f.Status != WireExpired {
		t.Fatalf("sender heard %q for a message the router never took", f.Status)
	}
}

func sockDir(p *Leg) string { return fp.Dir(p.SocketPath()) }

// A drop or hold notice never waits for the router: with a router that
// does not read, a sender's connection still goes on to its next frame, and
// each frame gets its receipt. Drop notices are lost and counted; hold
// notices wait for the router's room, and are lost (counted) only when the
// session stops first.
func TestNoticesNeverStallASendersConnection(t *testing.T) {
	tests := []struct {
		name        string
		policy      Policy
		want        WireStatus
		lostRunning int
	}{
		{"refused messages", PolicyRefuse, WireExpired, 3},
		{"held messages", PolicyHold, WireHeld, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, stop := stuckPeer(t, Config{Name: "stuck", Inbound: tt.policy})
			sender := listenSock(t, sockDir(p))
			var ids []string
			var frames [][]byte
			for _, text := range []string{"first", "second", "third"} {
				id, b := sender.userFrame(t, "prompting", text)
				ids, frames = append(ids, id), append(frames, b)
			}
			dial(t, p.SocketPath(), frames...) // one connection
			for _, id := range ids {
				sender.waitFrame(t, func(f Frame) bool { return f.OrigMsgID == id && f.Status == tt.want })
			}
			if n := p.NoticesLost(); n != uint64(tt.lostRunning) {
				t.Fatalf("NoticesLost = %d while the session runs, want %d", n, tt.lostRunning)
			}
			stop()
			if n := p.NoticesLost(); n != uint64(len(ids)) {
				t.Fatalf("NoticesLost = %d once it stopped, want %d", n, len(ids))
			}
		})
	}
}

// An alias worker's drop and hold notices reach the peer on the worker's
// pipe reader: with a router that does not read they are lost and
// counted, and the reader goes on to the worker's next line.
func TestAnAliasWorkersNoticesNeverWaitForTheRouter(t *testing.T) {
	tests := []struct {
		name string
		ev   message.Event
	}{
		{"a drop", message.Event{Type: message.EventDrop, Drop: &message.Drop{MsgID: "m-1", From: "uds:/c/x.sock", Reason: message.DropRateLimited}}},
		{"a hold", message.Event{Type: message.EventHeld, Held: &message.Held{Message: message.Message{ID: "m-2", From: "uds:/c/x.sock", Body: "held"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, stop := stuckPeer(t, Config{Name: "stuck"})
			done := make(chan struct{})
			go func() { defer close(done); p.OnAliasEvent("work", tt.ev) }()
			handed := testutil.Within(testutil.Patience, func() bool {
				select {
				case <-done:
					return true
				default:
					return false
				}
			})
			stop() // ends a wait, if there was one
			<-done
			if !handed || p.NoticesLost() != 1 {
				t.Fatalf("the notice was waited for (returned before the peer stopped: %v); NoticesLost = %d, want 1", handed, p.NoticesLost())
			}
		})
	}
}
