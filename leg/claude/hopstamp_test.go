package claude

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
)

func TestAForwardedSendCarriesOurHopToken(t *testing.T) {
	upstream := strings.Repeat("ab", message.HopTokenLen/2)
	tests := []struct {
		name  string
		chain []string
		want  func(own string) []string
	}{
		{"a first message carries no hop chain, like Claude Code's", nil, func(string) []string { return nil }},
		{"a forwarded message gets our token appended", []string{upstream}, func(own string) []string { return []string{upstream, own} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startRig(t, Config{})
			target := listenSock(t, r.socks)
			id := uuid.NewString()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := r.p.Send(ctx, message.Message{ID: id, To: target.addr, Body: "hop " + tt.name, Mode: message.ModePrompting, HopChain: tt.chain}); err != nil {
				t.Fatal(err)
			}
			f := target.waitFrame(t, func(f Frame) bool { return f.MsgID == id })
			c := ParseContent(f.Message.Content)
			if !c.Attested {
				t.Fatalf("envelope did not parse: %q", f.Message.Content)
			}
			if want := tt.want(r.p.hopToken); !slices.Equal(c.Envelope.HopChain, want) {
				t.Fatalf("hop-chain = %q, want %q", c.Envelope.HopChain, want)
			}
		})
	}
}
