package claude

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
)

func TestBridgedOutcomesSpeakClaudeCodesVocabulary(t *testing.T) {
	tests := []struct {
		name       string
		rc         message.Receipt
		wasHeld    bool
		send       bool
		wantStatus WireStatus
		wantDetail string
		wantDrop   string
	}{
		{"a clean delivery sends nothing, as Claude Code does", message.Receipt{Status: message.StatusDelivered}, false, false, "", "", ""},
		{"a delivery after a hold is reported delivered", message.Receipt{Status: message.StatusDelivered}, true, true, WireDelivered, "", ""},
		{"held is held", message.Receipt{Status: message.StatusHeld}, false, true, WireHeld, "", ""},
		{"denied is denied", message.Receipt{Status: message.StatusDenied}, true, true, WireDenied, "", ""},
		{"expired is expired", message.Receipt{Status: message.StatusExpired}, true, true, WireExpired, "", ""},
		{"refused is expired with detail refused", message.Receipt{Status: message.StatusRefused}, false, true, WireExpired, "refused", ""},
		{"misaddressed is expired with detail misaddressed", message.Receipt{Status: message.StatusMisaddressed}, false, true, WireExpired, "misaddressed", ""},
		{"a failed forward is expired with detail failed", message.Receipt{Status: message.StatusFailed}, false, true, WireExpired, "failed", ""},
		{"a drop keeps its reason", message.Receipt{Status: message.StatusDropped, DropReason: message.DropRateLimited}, false, true, WireDropped, "", "rate-limited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ok := receiptFor("uds:/me.sock", "m1", tt.rc, tt.wasHeld)
			if ok != tt.send {
				t.Fatalf("send = %v, want %v", ok, tt.send)
			}
			if !ok {
				return
			}
			if f.Status != tt.wantStatus || f.StatusDetail != tt.wantDetail || f.DropReason != tt.wantDrop || f.OrigMsgID != "m1" || f.Action != ActionPeerMessageStatus {
				t.Fatalf("frame = %+v", f)
			}
		})
	}
}

func TestARelayedHoldThenDeliveryReachesTheSenderAsTwoReceipts(t *testing.T) {
	r := startRig(t, Config{})
	s := listenSock(t, r.socks)
	reply := r.p.verifyReply(s.addr, os.Getpid())
	if reply.path == "" {
		t.Fatal("the test's own socket did not verify")
	}
	id := uuid.NewString()
	r.p.replies.remember(id, reply)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.p.relay(ctx, id, message.Receipt{MsgID: id, Status: message.StatusHeld, Reason: "held over there"})
	r.p.relay(ctx, id, message.Receipt{MsgID: id, Status: message.StatusDelivered})
	held := s.waitFrame(t, func(f Frame) bool { return f.OrigMsgID == id && f.Status == WireHeld })
	if held.Reason != "held over there" {
		t.Errorf("held reason = %q, want the far side's", held.Reason)
	}
	// Delivered after a hold is sent (a clean delivery would not be).
	s.waitFrame(t, func(f Frame) bool { return f.OrigMsgID == id && f.Status == WireDelivered })
}
