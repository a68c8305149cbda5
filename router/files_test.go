package router

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

var notes = []message.Attachment{{Path: "/srv/files/notes.txt", FileName: "notes.txt", FileSize: 5, SHA256: strings.Repeat("a", 64)}}

func TestASendWithFilesFailsOnALegThatCannotCarryThem(t *testing.T) {
	tests := []struct {
		name    string
		carries bool
	}{
		{"a leg without files fails it, saying why, and writes nothing", false},
		{"a leg that carries files gets them", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			var l leg.Leg = f
			if tt.carries {
				l = f.With(legtest.CarriesFiles)
			}
			r := start(t, l)
			out, err := r.Send(context.Background(), SendRequest{To: "review", Body: "see the notes", Files: notes})
			if err != nil {
				t.Fatal(err)
			}
			if tt.carries {
				if out.Status != message.StatusSent || len(f.Sent()) != 1 || len(f.Sent()[0].Attachments) != 1 {
					t.Fatalf("status %v, sent %+v", out.Status, f.Sent())
				}
				return
			}
			if out.Status != message.StatusFailed || len(f.Sent()) != 0 || !strings.Contains(out.Receipts[len(out.Receipts)-1].Reason, "cannot carry files") {
				t.Fatalf("status %v, receipts %+v, sent %+v", out.Status, out.Receipts, f.Sent())
			}
		})
	}
}

func TestABridgedMessageWhoseFilesCannotGoOnIsRefusedToItsSender(t *testing.T) {
	sender := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	refused := []message.Attachment{{FileName: "big.bin", Refused: message.AttachmentOverQuota}}
	tests := []struct {
		name  string
		files []message.Attachment
		why   string
	}{
		{"to a leg without files", notes, "the qwen leg cannot carry files"},
		{"with a file refused on arrival", refused, `"big.bin" was refused on arrival (uploads-quota)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := claudeLeg(sender)
			qw := qwenLeg(alpha)
			runBridge(t, Config{}, cl, qw)
			cl.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
				ID: "m", From: sender.Address, FromName: "lead", Body: "see the file", Mode: message.ModePrompting, Protocol: message.ProtocolClaude,
				AliasOf: alpha.Address, ToName: "alpha", Attachments: tt.files}})
			waitAny(cl, qw)
			if rs := cl.Relayed(); len(qw.SentAs()) != 0 || len(rs) != 1 || rs[0].Status != message.StatusFailed || !strings.Contains(rs[0].Reason, tt.why) {
				t.Fatalf("sends %+v relays %+v", qw.SentAs(), rs)
			}
		})
	}
}

func TestABridgedMessageCarriesItsFilesToALegThatTakesThem(t *testing.T) {
	sender := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	remote := message.Session{Address: "bridge:session_01files", Protocol: message.ProtocolRemote, Name: "cloud", SessionID: "session_01files"}
	cl := claudeLeg(sender)
	rl := fake(message.ProtocolRemote, remote)
	r := New(Config{Bridge: true, BridgeInterval: time.Hour}, host(cl), rl.With(legtest.CarriesFiles))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	cl.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
		ID: "m", From: sender.Address, FromName: "lead", Body: "see the file", Mode: message.ModePrompting, Protocol: message.ProtocolClaude,
		AliasOf: remote.Address, ToName: "cloud", Attachments: notes}})
	deadline := time.Now().Add(3 * time.Second)
	for len(rl.Sent()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if sent := rl.Sent(); len(sent) != 1 || len(sent[0].Attachments) != 1 || sent[0].Attachments[0] != notes[0] {
		t.Fatalf("sent %+v", sent)
	}
}

func TestABridgeIDOfALocalSessionResolvesToItsSocket(t *testing.T) {
	local := message.Session{Address: "uds:/tmp/cc-socks/40.sock", Protocol: message.ProtocolClaude, Name: "signed-in", SessionID: "c-40", PID: 40, BridgeSessionID: "cse_01local"}
	twin := local
	twin.Address, twin.PID, twin.SessionID = "uds:/tmp/cc-socks/41.sock", 41, "c-41"
	cloud := message.Session{Address: "bridge:cse_01local", Protocol: message.ProtocolRemote, Name: "signed-in-cloud", SessionID: "cse_01local"}
	newRemote := func() leg.Leg {
		// It claims every bridge: address, as the remote leg does.
		f := legtest.New(message.ProtocolRemote, cloud)
		f.OnClaims = func(a addressing.Address) bool { return a.Kind == addressing.KindBridge }
		return f
	}
	tests := []struct {
		name    string
		locals  []message.Session
		remote  bool
		want    string // the address resolved to; "" for an ambiguity
		cloudTo string // what the cloud-only resolution gives
	}{
		{"with no cloud configured, over the socket", []message.Session{local}, false, local.Address, ""},
		{"with the cloud configured too, still over the socket", []message.Session{local}, true, local.Address, cloud.Address},
		{"two local sessions claiming one id are ambiguous", []message.Session{local, twin}, true, "", cloud.Address},
		{"no local session with the id: the cloud's", nil, true, cloud.Address, cloud.Address},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			legs := []leg.Leg{claudeLeg(tt.locals...)}
			if tt.remote {
				legs = append(legs, newRemote())
			}
			r := start(t, legs...)
			_, s, err := r.Resolve(context.Background(), "bridge:cse_01local")
			var amb *addressing.AmbiguousError
			switch {
			case tt.want == "" && (!errors.As(err, &amb) || len(amb.Candidates) != 2):
				t.Fatalf("err = %v, want an ambiguity between both sockets", err)
			case tt.want != "" && (err != nil || s.Address != tt.want):
				t.Fatalf("resolved to %+v, %v; want %s", s, err, tt.want)
			}
			if tt.cloudTo != "" {
				if _, s, err := r.resolveCloud(context.Background(), "bridge:cse_01local"); err != nil || s.Address != tt.cloudTo {
					t.Fatalf("controls resolve to %+v, %v; want the cloud's session", s, err)
				}
			}
		})
	}
}
