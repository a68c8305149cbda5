package qwen

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
)

// aliasRecords reads every alias record p has on disk.
func aliasRecords(t *testing.T, p *Peer) []map[string]any {
	t.Helper()
	var out []map[string]any
	p.al.mu.Lock()
	defer p.al.mu.Unlock()
	for _, al := range p.al.byKey {
		b, err := os.ReadFile(al.path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		out = append(out, m)
	}
	return out
}

func TestQwenAliasRecordsFollowTheirSessions(t *testing.T) {
	p := registerTestPeer(t, PeerConfig{Name: "gw"})
	runPeer(t, p)
	ctx := context.Background()
	other := message.Session{Address: "uds:/tmp/cc-socks/9.sock", Protocol: message.ProtocolClaude, Name: "work-08", SessionID: uuid.NewString()}
	self := message.Session{Address: "uds:/tmp/cc-socks/7.sock", Protocol: message.ProtocolClaude, Name: "gw", SessionID: uuid.NewString()}
	if err := p.SyncAliases(ctx, []message.Session{other, self}); err != nil {
		t.Fatal(err)
	}
	recs := aliasRecords(t, p)
	if len(recs) != 1 || recs[0]["name"] != "work-08" || recs[0]["kind"] != "gateway-alias" {
		t.Fatalf("records %v; want one gateway-alias for work-08 (none for our own name)", recs)
	}
	renamed := other
	renamed.Name = "work-09"
	if err := p.SyncAliases(ctx, []message.Session{renamed}); err != nil {
		t.Fatal(err)
	}
	recs = aliasRecords(t, p)
	if len(recs) != 1 || recs[0]["name"] != "work-09" {
		t.Fatalf("records %v after a rename; want one named work-09", recs)
	}
}
