package federation

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

func TestAnUnpublishedSessionNeverReachesAnotherHostNorTakesItsMessages(t *testing.T) {
	c := sharedCluster(t)
	// Host names of this run only: a durable consumer outlives its host.
	tag := randomID()[:6]
	ha, hb := "pub-a-"+tag, "pub-b-"+tag
	a := join(t, c.url(0), ha, func(c *Config) { c.Publish = []string{"pub-*", "team-?"} })
	b := join(t, c.url(1), hb)
	shown, hidden := session("pub-one", "s-pub", message.ProtocolClaude), session("secret", "s-secret", message.ProtocolQwen)
	pa := &peer{sessions: []message.Session{hidden, shown, session("team-1", "s-team", message.ProtocolQwen)}}
	serve(t, a, pa)
	serve(t, b, &peer{})
	receipts := run(t, b)
	ctx := testutil.Context(t, 20*time.Second)

	testutil.Eventually(t, "b lists a's published sessions", func() bool {
		return strings.Join(addresses(filterHosts(b.Sessions(), ha)), " ") == "pub-one@"+ha+" team-1@"+ha
	})
	// The roster entry itself, as any host reads it, does not name it.
	e, err := b.roster.Get(ctx, ha)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(e.Value(), []byte("secret")) {
		t.Fatalf("a's roster entry holds the unpublished session: %s", e.Value())
	}
	if _, err := b.Leg().Send(ctx, message.Message{ID: "m-pub-0", To: "secret@" + ha, Body: "x"}); err == nil {
		t.Fatal("b sent to a session a does not publish")
	}
	// A host that guesses the address anyway is refused, with the answer
	// a missing session gets; one it may reach, sent after, arrives.
	forge := func(id string, to message.Session) {
		id += tag
		v, err := b.encode(envelope{Kind: kindMessage, From: hb, To: ha, Message: &message.Message{ID: id, To: to.Address, ToName: to.Name, ToSessionID: to.SessionID, Body: "guess"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.js.Publish(ctx, inSubject(ha), v, jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	forge("m-pub-1", hidden)
	forge("m-pub-2", message.Session{Address: shown.Address, Name: hidden.Name}) // a published address, the hidden name
	forge("m-pub-3", shown)
	got := map[string]message.Status{}
	for len(got) < 3 {
		select {
		case ev := <-receipts:
			id := strings.TrimSuffix(ev.Receipt.MsgID, tag)
			got[id] = ev.Receipt.Status
			if id != "m-pub-3" && !strings.Contains(ev.Receipt.Reason, "no session") {
				t.Errorf("refusal says %q", ev.Receipt.Reason)
			}
		case <-ctx.Done():
			t.Fatalf("receipts %v", got)
		}
	}
	if got["m-pub-1"] != message.StatusFailed || got["m-pub-2"] != message.StatusFailed || got["m-pub-3"] != message.StatusDelivered {
		t.Fatalf("receipts %v", got)
	}
	if r := pa.received(); len(r) != 1 || r[0].ID != "m-pub-3"+tag {
		t.Fatalf("a delivered %+v", r)
	}
}

func TestPublishFlagsRepeatAndRefuseABadPattern(t *testing.T) {
	parse := func(args ...string) *Flags {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := RegisterFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := parse("--federation", "embedded", "--federation-publish", "a-*", "--federation-publish", "b")
	if got := f.config("", nil).Publish; strings.Join(got, ",") != "a-*,b" {
		t.Fatalf("publish = %q", got)
	}
	if err := parse("--federation", "embedded", "--host", "h", "--federation-publish", "[").Check(""); err == nil || !strings.Contains(err.Error(), "--federation-publish") {
		t.Fatalf("bad pattern: %v", err)
	}
}

// A host that starts without a roster entry of its own (a clean restart:
// Close deleted it) has not listed its sessions until Serve does: a
// message waiting for it is held back until then, not refused as sent to
// no session.
func TestAMessageWaitingForAHostThatStartsWithoutARosterEntryIsDeliveredOnceItListsItsSessions(t *testing.T) {
	c := sharedCluster(t)
	tag := randomID()[:6]
	ha, hb := "late-a-"+tag, "late-b-"+tag
	a := join(t, c.url(0), ha)
	serve(t, a, &peer{})
	receipts := run(t, a)
	ctx := testutil.Context(t, 30*time.Second)
	sink := session("sink", "s-sink", message.ProtocolQwen)
	id := "m-late-" + randomID()
	v, err := a.encode(envelope{Kind: kindMessage, From: ha, To: hb, Message: &message.Message{ID: id, To: sink.Address, ToName: sink.Name, ToSessionID: sink.SessionID, Body: "waiting"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.js.Publish(ctx, inSubject(hb), v, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
	b := join(t, c.url(1), hb)
	pb := &peer{sessions: []message.Session{sink}}
	local := pb.local()
	list := local.Sessions
	slow := true
	local.Sessions = func(ctx context.Context) ([]message.Session, error) {
		if slow { // Serve's goroutine alone calls it
			slow = false
			time.Sleep(time.Second) // the consumer pulls the waiting message meanwhile
		}
		return list(ctx)
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Serve(sctx, local) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case ev := <-receipts:
		if ev.Receipt.MsgID != id || ev.Receipt.Status != message.StatusDelivered {
			t.Fatalf("receipt %+v, want delivered", *ev.Receipt)
		}
	case <-ctx.Done():
		t.Fatal("no receipt")
	}
	if r := pb.received(); len(r) != 1 || r[0].ID != id {
		t.Fatalf("b delivered %+v", r)
	}
}
