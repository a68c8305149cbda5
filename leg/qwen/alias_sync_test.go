package qwen

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/message"
)

// aliasRecords reads every alias record p has on disk.
func aliasRecords(t *testing.T, p *Leg) []map[string]any {
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
	p := registerTestPeer(t, Config{Name: "gw"})
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

// A sender may read an alias record the moment it is written and send to
// its session id at once (the bridge's answer by name): the inbox must
// take that frame for the alias, not judge it misaddressed.
func TestAFrameToAnAliasRecordJustWrittenReachesTheAlias(t *testing.T) {
	gw := registerTestPeer(t, Config{Name: "gw"})
	gwEvents, _ := runPeer(t, gw)
	sender := registerTestPeer(t, Config{Name: "qwen-work", Home: gw.cfg.Home})
	senderEvents, _ := runPeer(t, sender)
	origin := message.Session{Address: "uds:/tmp/cc-socks/9.sock", Protocol: message.ProtocolClaude, Name: "work-08", SessionID: uuid.NewString()}

	var got message.Event
	gw.testHookAliasWritten = func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			return
		}
		rec, err := ParseRecord(b)
		if err != nil {
			t.Error(err)
			return
		}
		id := uuid.NewString()
		if _, err := sender.Send(context.Background(), message.Message{ID: id, To: addressing.UDS(rec.IPCPath),
			ToSessionID: rec.SessionID, Body: "answer by name", Mode: message.ModePrompting}); err != nil {
			t.Error(err)
			return
		}
		// Wait here, before the sync goes on: the frame is judged while
		// the record is all there is of the alias.
		timeout := time.After(10 * time.Second)
		for {
			select {
			case ev := <-gwEvents:
				if ev.Type == message.EventMessage && ev.Message.ID == id {
					got = ev
					return
				}
			case ev := <-senderEvents:
				if ev.Type == message.EventReceipt && ev.Receipt.MsgID == id {
					got = ev
					return
				}
			case <-timeout:
				t.Error("neither the alias nor the sender heard of the frame")
				return
			}
		}
	}
	if err := gw.SyncAliases(context.Background(), []message.Session{origin}); err != nil {
		t.Fatal(err)
	}
	if got.Type != message.EventMessage || got.Message.ToName != "work-08" || got.Message.AliasOf != origin.Address {
		t.Fatalf("got %+v (receipt %+v), want the message at the work-08 alias", got, got.Receipt)
	}
}

// The loss: a session of another leg that sent before any sync listed it
// (an MCP client that just joined) had no alias record, so a receiver
// answering it by name found no such session until the next sync.
func TestASenderNoSyncHasListedYetGetsItsAliasRecordWithItsFirstMessage(t *testing.T) {
	gw := registerTestPeer(t, Config{Name: "gw"})
	runPeer(t, gw)
	target := registerTestPeer(t, Config{Name: "qwen-work", Home: gw.cfg.Home})
	runPeer(t, target)
	sender := message.Session{Address: "mcp:agent", Protocol: message.ProtocolMCP, Name: "agent", SessionID: uuid.NewString()}
	m := message.Message{ID: uuid.NewString(), To: addressing.UDS(target.SocketPath()), Body: "hi", Mode: message.ModePrompting}
	if _, err := gw.SendAs(context.Background(), sender, m); err != nil {
		t.Fatal(err)
	}
	recs := aliasRecords(t, gw)
	if len(recs) != 1 || recs[0]["name"] != "agent" || recs[0]["kind"] != KindAlias {
		t.Fatalf("records %v; want agent's alias", recs)
	}
	// A second message does not publish it again; a sync that no longer
	// lists the sender removes it.
	m.ID, m.Body = uuid.NewString(), "hi again"
	if _, err := gw.SendAs(context.Background(), sender, m); err != nil {
		t.Fatal(err)
	}
	if recs := aliasRecords(t, gw); len(recs) != 1 {
		t.Fatalf("records %v after a second message; want one", recs)
	}
	if err := gw.SyncAliases(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if recs := aliasRecords(t, gw); len(recs) != 0 {
		t.Fatalf("records %v after a sync without the sender; want none", recs)
	}
}

// The race: a frame the inbox admitted for an alias just before a sync
// retired it (its session left, or was renamed) was handed on as a message
// to the gateway itself once the alias was forgotten.
func TestAFrameAdmittedForAnAliasJustBeforeItIsRetiredStillGoesToItsSession(t *testing.T) {
	p := registerTestPeer(t, Config{Name: "gw"})
	ctx := context.Background()
	origin := message.Session{Address: "uds:/tmp/cc-socks/9.sock", Protocol: message.ProtocolClaude, Name: "work-08", SessionID: uuid.NewString()}
	if err := p.SyncAliases(ctx, []message.Session{origin}); err != nil {
		t.Fatal(err)
	}
	p.al.mu.Lock()
	al := p.al.byKey[originKey(origin)]
	p.al.mu.Unlock()
	in := Inbound{Frame: UserFrame{MsgID: "m-late", ToSessionID: al.sid, Content: "for work-08"}}
	if m := p.toMessage(in); m.AliasOf != origin.Address { // admitted: the alias is current
		t.Fatalf("before the sync: %+v", m)
	}
	if err := p.SyncAliases(ctx, nil); err != nil { // the session left
		t.Fatal(err)
	}
	if m := p.toMessage(in); m.AliasOf != origin.Address || m.ToName != origin.Name {
		t.Fatalf("the frame admitted before the alias retired became %+v, want it for %s (%s)", m, origin.Name, origin.Address)
	}
	if p.guard.cfg.OwnsSession(al.sid) {
		t.Fatal("the inbox still admits frames for the retired alias")
	}
}

// A reply by a name no record of an inbox holds is refused to its sender:
// the gateway's inbox holds its aliases' records too, and the first of
// them is not the one meant (demo-qwen's answer to "zed-cli" once reached
// demo-claude's alias this way).
func TestAReplyToANameNoRecordOfTheInboxHoldsIsRefusedNotGuessed(t *testing.T) {
	gw := registerTestPeer(t, Config{Name: "gw"})
	gwEvents, _ := runPeer(t, gw)
	sender := registerTestPeer(t, Config{Name: "qwen-work", Home: gw.cfg.Home})
	runPeer(t, sender)
	origin := message.Session{Address: "uds:/tmp/cc-socks/9.sock", Protocol: message.ProtocolClaude, Name: "work-08", SessionID: uuid.NewString()}
	if err := gw.SyncAliases(context.Background(), []message.Session{origin}); err != nil {
		t.Fatal(err)
	}
	inbox := addressing.UDS(gw.SocketPath())
	_, err := sender.Send(context.Background(), message.Message{ID: uuid.NewString(), To: inbox, ToName: "zed-cli", Body: "to nobody", Mode: message.ModePrompting})
	if !errors.Is(err, ErrNoRecord) || !strings.Contains(err.Error(), `none is named "zed-cli"`) {
		t.Fatalf("a reply to zed-cli at the gateway's inbox: %v, want it refused", err)
	}
	id := uuid.NewString()
	if _, err := sender.Send(context.Background(), message.Message{ID: id, To: inbox, ToName: "work-08", Body: "to the alias", Mode: message.ModePrompting}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-gwEvents:
			if ev.Type == message.EventMessage && ev.Message.ID == id {
				if ev.Message.AliasOf != origin.Address {
					t.Fatalf("the reply by name reached %+v, want the work-08 alias", ev.Message)
				}
				return
			}
		case <-timeout:
			t.Fatal("the reply by name never arrived")
		}
	}
}
