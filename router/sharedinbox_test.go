package router

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/leg/legtest"
	"github.com/sessiongateway/gateway/message"
)

// One Qwen process may host several sessions behind one inbox: their
// records share an ipcPath and differ by session id (and name).
const sharedInbox = "uds:/tmp/qwen-socks-0123456789abcdef/77.sock"

var (
	alpha = message.Session{Address: sharedInbox, Protocol: message.ProtocolQwen, Name: "alpha", SessionID: "5d0d1c8e-0000-4000-8000-00000000000a", PID: 77}
	beta  = message.Session{Address: sharedInbox, Protocol: message.ProtocolQwen, Name: "beta", SessionID: "5d0d1c8e-0000-4000-8000-00000000000b", PID: 77}
	// A Claude session and a Qwen session may share a name.
	claudeWork = message.Session{Address: "uds:/tmp/cc-socks/20.sock", Protocol: message.ProtocolClaude, Name: "work", SessionID: "c-work", PID: 20}
	qwenWork   = message.Session{Address: "uds:/tmp/qwen-socks-0123456789abcdef/21.sock", Protocol: message.ProtocolQwen, Name: "work", SessionID: "q-work", PID: 21}
)

// host is f as an alias host, as the bridge's legs are: f records what
// the bridge sends through it (SentAs) and relays to it (Relayed).
func host(f *legtest.Fake) leg.Leg { return f.With(legtest.HostsAliases) }

func qwenLeg(ss ...message.Session) *legtest.Fake {
	return fake(message.ProtocolQwen, ss...)
}

func claudeLeg(ss ...message.Session) *legtest.Fake {
	return fake(message.ProtocolClaude, ss...)
}

func TestSessionsSharingAnInboxResolveToTheOneNamed(t *testing.T) {
	tests := []struct {
		name string
		to   string
		want message.Session
	}{
		{"the first session's name picks it", "alpha", alpha},
		{"the second session's name picks it, not the last listed at the address", "beta", beta},
		{"a name pinned by its ref picks it", "alpha [" + addressing.Ref(alpha.SessionID) + "]", alpha},
		{"a bracketed ref picks its session", "[" + addressing.Ref(beta.SessionID) + "]", beta},
		{"a bare ref picks its session", addressing.Ref(alpha.SessionID), alpha},
	}
	for _, order := range [][]message.Session{{alpha, beta}, {beta, alpha}} {
		for _, tt := range tests {
			t.Run(tt.name+" (listed "+order[0].Name+" first)", func(t *testing.T) {
				q := qwenLeg(order...)
				r := start(t, q)
				out, err := r.Send(context.Background(), SendRequest{To: tt.to, Body: "hi"})
				if err != nil {
					t.Fatal(err)
				}
				if len(q.Sent()) != 1 {
					t.Fatalf("sent %d messages", len(q.Sent()))
				}
				m := q.Sent()[0]
				if m.ToSessionID != tt.want.SessionID || m.ToName != tt.want.Name || m.To != sharedInbox {
					t.Fatalf("the leg was asked to send to %s (%s) at %s, want %s (%s)", m.ToName, m.ToSessionID, m.To, tt.want.Name, tt.want.SessionID)
				}
				if out.Message.ToSessionID != tt.want.SessionID {
					t.Fatalf("outbound records session %q", out.Message.ToSessionID)
				}
			})
		}
	}
}

// ambiguity asserts err lists candidates that each resolve, alone, to a
// different one of want.
func ambiguity(t *testing.T, r *Router, err error, want ...message.Session) {
	t.Helper()
	var amb *addressing.AmbiguousError
	if !errors.As(err, &amb) {
		t.Fatalf("err = %v, want an ambiguity", err)
	}
	if len(amb.Candidates) != len(want) {
		t.Fatalf("candidates %q, want %d", amb.Candidates, len(want))
	}
	var got []message.Session
	for _, c := range amb.Candidates {
		l, s, err := r.Resolve(context.Background(), c)
		if err != nil {
			t.Fatalf("candidate %q does not resolve: %v", c, err)
		}
		if l.Name() != s.Protocol {
			t.Fatalf("candidate %q resolved to a %s session on the %s leg", c, s.Protocol, l.Name())
		}
		got = append(got, s)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Fatalf("candidates %q resolve to %+v; none is %s", amb.Candidates, got, w.SessionID)
		}
	}
}

func TestAnAddressSeveralSessionsShareIsAmbiguousWithCandidatesThatResolve(t *testing.T) {
	r := start(t, qwenLeg(alpha, beta))
	_, _, err := r.Resolve(context.Background(), sharedInbox)
	ambiguity(t, r, err, alpha, beta)
}

func TestAClaudeAndAQwenSessionOfOneName(t *testing.T) {
	r := start(t, claudeLeg(claudeWork), qwenLeg(qwenWork))
	t.Run("the bare name is ambiguous with a candidate for each that resolves", func(t *testing.T) {
		_, _, err := r.Resolve(context.Background(), "work")
		ambiguity(t, r, err, claudeWork, qwenWork)
	})
	for _, s := range []message.Session{claudeWork, qwenWork} {
		ref := addressing.Ref(s.SessionID)
		for _, to := range []string{"[" + ref + "]", ref, "work [" + ref + "]"} {
			t.Run(string(s.Protocol)+"'s session is reached by "+to, func(t *testing.T) {
				l, got, err := r.Resolve(context.Background(), to)
				if err != nil {
					t.Fatal(err)
				}
				if got != s || l.Name() != s.Protocol {
					t.Fatalf("resolved to %+v on %s", got, l.Name())
				}
			})
		}
	}
}

func TestTheBridgeForwardsToTheSessionItsAliasStandsFor(t *testing.T) {
	// A Claude session writes to the Claude-side alias of beta: the alias
	// names beta, and its address is the inbox alpha shares.
	sender := message.Session{Address: "uds:/tmp/cc-socks/30.sock", Protocol: message.ProtocolClaude, Name: "lead", SessionID: "c-lead"}
	for _, to := range []message.Session{alpha, beta} {
		t.Run("a message to the alias of "+to.Name+" reaches "+to.Name, func(t *testing.T) {
			cl := claudeLeg(sender)
			qw := qwenLeg(alpha, beta)
			r := New(Config{Bridge: true, BridgeInterval: time.Hour}, host(cl), host(qw))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			defer func() { cancel(); <-done }()
			<-cl.Started()
			cl.Emit(t, message.Event{Type: message.EventMessage, Leg: message.ProtocolClaude, Message: &message.Message{
				ID: "m-1", From: sender.Address, FromName: "lead", Body: "hi", Mode: message.ModePrompting,
				Protocol: message.ProtocolClaude, AliasOf: to.Address, ToName: to.Name,
			}})
			deadline := time.Now().Add(10 * time.Second)
			for len(qw.SentAs()) == 0 && len(cl.Relayed()) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if rel := cl.Relayed(); len(rel) > 0 {
				t.Fatalf("the sender was told %+v", rel)
			}
			got := qw.SentAs()
			if len(got) != 1 {
				t.Fatalf("forwarded %d messages", len(got))
			}
			if got[0].ToSessionID != to.SessionID || got[0].ToName != to.Name || got[0].FromName != "lead" {
				t.Fatalf("forwarded %+v, want it pinned to %s (%s)", got[0], to.Name, to.SessionID)
			}
		})
	}
}
