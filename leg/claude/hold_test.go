package claude

import (
	"strings"
	"testing"

	"github.com/sessiongateway/gateway/message"
)

// Holds were unbounded: 2,000 frames with 200 KB bodies were all parked
// (2.67 GB resident). Past MaxHeld messages, or MaxHeldBytes of bodies, a
// message is dropped queue-full with a receipt, and nothing is evicted.
func TestHoldsAreCapped(t *testing.T) {
	tests := []struct {
		name    string
		lim     Limits
		bodies  []string
		wantHit int // how many of bodies are held
	}{
		{"by count", Limits{MaxHeld: 3}, []string{"a", "b", "c", "d", "e"}, 3},
		{"by bytes", Limits{MaxHeldBytes: 100}, []string{strings.Repeat("x", 60), strings.Repeat("y", 40), strings.Repeat("z", 1)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startRig(t, Config{Inbound: PolicyHold, Limits: tt.lim})
			s := listenSock(t, r.socks)
			var ids []string
			for _, body := range tt.bodies {
				id, line := s.userFrame(t, "prompting", body)
				ids = append(ids, id)
				dial(t, r.p.SocketPath(), line)
			}
			for i, id := range ids {
				ev := r.next(t, func(ev message.Event) bool {
					return ev.Held != nil && ev.Held.Message.ID == id || ev.Drop != nil && ev.Drop.MsgID == id
				})
				switch {
				case i < tt.wantHit && ev.Held == nil:
					t.Fatalf("message %d: %+v, want held", i, ev.Drop)
				case i >= tt.wantHit && (ev.Drop == nil || ev.Drop.Reason != message.DropQueueFull):
					t.Fatalf("message %d: %+v, want dropped queue-full", i, ev)
				}
			}
			if got := len(r.p.Held()); got != tt.wantHit {
				t.Fatalf("Held() lists %d, want %d", got, tt.wantHit)
			}
			s.waitFrame(t, func(f Frame) bool {
				return f.Status == WireDropped && f.DropReason == "queue-full" &&
					(f.OrigMsgID == ids[tt.wantHit] || strings.Contains(strings.Join(f.DroppedMsgIDs, " "), ids[tt.wantHit]))
			})
		})
	}
}
