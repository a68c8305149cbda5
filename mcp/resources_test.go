package mcp

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessiongateway/gateway/api"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

var buildBot = message.Session{Address: "bridge:session_1", Name: "build-bot", Protocol: message.ProtocolRemote, SessionID: "session_1", Kind: "remote", Reachable: true}

// remoteLeg lists one claude.ai session, build-bot.
func remoteLeg() *legtest.Fake { return legtest.New(message.ProtocolRemote, buildBot) }

func say(w *world, text string) {
	w.rt.Hub().Publish(message.Event{Type: message.EventRemote, Remote: &message.RemoteEvent{
		SessionID: buildBot.SessionID, Address: buildBot.Address, Kind: "assistant", MessageID: text, Final: true, Text: text}})
}

func TestRemoteSessionOutputReadsOnlyWhatIsNewFromItsCursor(t *testing.T) {
	w := newWorld(t, remoteLeg())
	cs := w.connect(t, "reader", api.Scopes(1<<api.ScopeRead))
	say(w, "first words")
	var out struct {
		Output     string `json:"output"`
		NextCursor int64  `json:"next_cursor"`
	}
	mustCall(t, cs, "remote_session_output", map[string]any{"session": "build-bot"}, &out)
	if !strings.Contains(out.Output, "first words") {
		t.Fatalf("output = %q", out.Output)
	}
	say(w, "second words")
	cursor := out.NextCursor
	mustCall(t, cs, "remote_session_output", map[string]any{"session": "build-bot", "cursor": cursor}, &out)
	if !strings.Contains(out.Output, "second words") || strings.Contains(out.Output, "first words") {
		t.Fatalf("output after cursor %d = %q", cursor, out.Output)
	}
	if e := call(t, cs, "remote_session_output", map[string]any{"session": "reader"}, nil); !strings.Contains(e, "only remote") {
		t.Fatalf("an MCP session's output: %q", e)
	}
}

func TestSubscribersHearOfTranscriptAndRosterChanges(t *testing.T) {
	w := newWorld(t, remoteLeg())
	updated := make(chan string, 16)
	cs := w.connectWith(t, "watcher", api.AllScopes, updates(updated))
	ctx := testutil.Context(t, 30*time.Second)
	transcript := "gateway://remote/build-bot/transcript"
	for _, uri := range []string{SessionsURI, transcript} {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: transcript})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read %s: %v %v", transcript, res, err)
	}
	wait := func(want string) {
		t.Helper()
		for {
			select {
			case uri := <-updated:
				if uri == want {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no resources/updated for %s", want)
			}
		}
	}
	say(w, "progress")
	wait(transcript)
	w.connect(t, "newcomer", api.AllScopes)
	wait(SessionsURI)
}

func TestAClientThatSetALogLevelIsToldOfEachMessage(t *testing.T) {
	w := newWorld(t)
	alice := w.connect(t, "alice", api.AllScopes)
	logs := make(chan any, 8)
	ct, st := sdk.NewInMemoryTransports()
	ctx := testutil.Context(t, 30*time.Second)
	ss, err := w.srv.session("bob", "memory", api.Grant{ID: "t", Scopes: api.AllScopes}).srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	c := sdk.NewClient(&sdk.Implementation{Name: "bob"}, &sdk.ClientOptions{
		//lint:ignore SA1019 the versions served have logging
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) { logs <- req.Params.Data },
	})
	bob, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	testutil.Eventually(t, "bob joined", func() bool { return w.listed("bob") })
	//lint:ignore SA1019 the versions served have logging
	if err := bob.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	mustCall(t, alice, "send_message", map[string]any{"to": "bob", "text": "pushed"}, nil)
	select {
	case d := <-logs:
		m, _ := d.(map[string]any)
		if m["from"] != "alice" || m["text"] != "pushed" {
			t.Fatalf("notification data = %v", d)
		}
	case <-ctx.Done():
		t.Fatal("no notification")
	}
}
