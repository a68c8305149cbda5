package claude

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/uds"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// sendTo makes the rig send body to s, as the router does.
func (r *rig) sendTo(t *testing.T, s *sock, mode message.Mode, body string) string {
	t.Helper()
	id := uuid.NewString()
	if _, err := r.p.Send(testutil.Context(t, 10*time.Second), message.Message{ID: id, To: s.addr, Body: body, Mode: mode}); err != nil {
		t.Fatal(err)
	}
	s.waitFrame(t, func(f Frame) bool { return f.MsgID == id })
	return id
}

func TestRequireAuthAppliesToUserFramesOnly(t *testing.T) {
	r := startRig(t, Config{RequireAuth: true})
	target := listenSock(t, r.socks)

	t.Run("a held receipt without an auth line is heard", func(t *testing.T) {
		id := r.sendTo(t, target, message.ModeBypass, "bypass hello")
		dial(t, r.p.SocketPath(), marshal(t, NewStatusReceipt(target.addr, id, WireHeld, "", "")))
		ev := r.next(t, isType(message.EventReceipt))
		if ev.Receipt.MsgID != id || ev.Receipt.Status != message.StatusHeld {
			t.Fatalf("receipt = %+v, want held for %s", ev.Receipt, id)
		}
	})
	t.Run("an idle notice without an auth line is heard", func(t *testing.T) {
		sub, err := r.p.NotifyWhenIdle(testutil.Context(t, 10*time.Second), message.Session{Address: target.addr})
		if err != nil {
			t.Fatal(err)
		}
		dial(t, r.p.SocketPath(), marshal(t, NewIdleNotice(target.addr, sub, IdleStateIdle, 1, "done", "prompting")))
		ev := r.next(t, isType(message.EventIdle))
		if ev.Idle.SubID != sub || ev.Idle.State != IdleStateIdle {
			t.Fatalf("idle = %+v", ev.Idle)
		}
	})
	t.Run("a message without an auth line is still refused", func(t *testing.T) {
		sender := listenSock(t, r.socks)
		id, b := sender.userFrame(t, "prompting", "let me in")
		dial(t, r.p.SocketPath(), b)
		ev := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventDrop || ev.Type == message.EventMessage })
		if ev.Type != message.EventDrop || ev.Drop.MsgID != id || ev.Drop.Reason != message.DropUnauthenticated {
			t.Fatalf("event = %+v, want a drop for %s", ev, id)
		}
	})
	t.Run("a message with our peer token is delivered", func(t *testing.T) {
		sender := listenSock(t, r.socks)
		id, b := sender.userFrame(t, "prompting", "authenticated hello")
		dial(t, r.p.SocketPath(), authLine(t, r.p.peerToken), b)
		ev := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventDrop || ev.Type == message.EventMessage })
		if ev.Type != message.EventMessage || ev.Message.ID != id || ev.Message.Auth != message.AuthPeer {
			t.Fatalf("event = %+v, want the message %s", ev, id)
		}
	})
}

func TestConnectionsAreClassifiedByTheirToken(t *testing.T) {
	r := startRig(t, Config{Inbound: PolicyAccept})
	tests := []struct {
		name  string
		token func() string // "" means no auth line
		want  message.AuthClass
	}{
		{"our peer token is a peer", func() string { return r.p.peerToken }, message.AuthPeer},
		{"our child token is a child", func() string { return r.p.ChildToken() }, message.AuthChild},
		{"a wrong token is unauthenticated", func() string { return strings.Repeat("ab", 16) }, message.AuthUnauthenticated},
		{"no auth line is unauthenticated", func() string { return "" }, message.AuthUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sender := listenSock(t, r.socks)
			id, b := sender.userFrame(t, "prompting", "classify "+tt.name)
			if tok := tt.token(); tok != "" {
				dial(t, r.p.SocketPath(), authLine(t, tok), b)
			} else {
				dial(t, r.p.SocketPath(), b)
			}
			ev := r.next(t, isType(message.EventMessage))
			if ev.Message.ID != id || ev.Message.Auth != tt.want {
				t.Fatalf("message %s auth %q, want %s auth %q", ev.Message.ID, ev.Message.Auth, id, tt.want)
			}
		})
	}
}

func TestSendToATargetWithoutAKeyFileHasNoAuthLine(t *testing.T) {
	r := startRig(t, Config{})
	tests := []struct {
		name     string
		key      bool
		wantAuth bool
		tok      string
	}{
		{"a target with no key file gets the frame alone", false, false, ""},
		{"a target with a key file gets its token first", true, true, strings.Repeat("cd", 16)},
		{"a token longer than the room kept for it still comes first", true, true, strings.Repeat("ab", authRoom)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := listenSock(t, r.socks)
			tok := tt.tok
			if tt.key {
				r.writeKey(t, target, tok, "")
			}
			id := r.sendTo(t, target, message.ModePrompting, "hello "+tt.name)
			target.settle(t)
			var conn []string
			for _, c := range target.lines() {
				if len(c) > 0 && strings.Contains(c[len(c)-1], id) {
					conn = c
				}
			}
			wantLines := 1
			if tt.wantAuth {
				wantLines = 2
			}
			if len(conn) != wantLines {
				t.Fatalf("connection lines = %q, want %d", conn, wantLines)
			}
			if tt.wantAuth {
				l, err := ParseLine([]byte(conn[0]))
				if err != nil || l.Auth == nil || l.Auth.Token != tok {
					t.Fatalf("first line %q is not the auth line with the target's token", conn[0])
				}
				if want, _ := json.Marshal(Auth{Type: TypeAuth, Token: tok}); conn[0] != string(want) {
					t.Fatalf("auth line %q, want %q", conn[0], want)
				}
			}
			// The frame line is the frame as Marshal spells it.
			l, err := ParseLine([]byte(conn[len(conn)-1]))
			if err != nil || l.Frame == nil {
				t.Fatalf("last line %q is no frame: %v", conn[len(conn)-1], err)
			}
			if fb, _ := l.Frame.Marshal(); string(fb) != conn[len(conn)-1] {
				t.Fatalf("frame line %q, want it as Marshal spells it: %q", conn[len(conn)-1], fb)
			}
		})
	}
}

func TestSendRefusals(t *testing.T) {
	r := startRig(t, Config{})
	t.Run("a frame over 1 MiB is refused with ErrTooLarge", func(t *testing.T) {
		target := listenSock(t, r.socks)
		_, err := r.p.Send(testutil.Context(t, 10*time.Second), message.Message{ID: uuid.NewString(), To: target.addr, Body: strings.Repeat("x", MaxLine), Mode: message.ModePrompting})
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
	})
	t.Run("a key file left by an earlier holder of the pid is ErrStaleKey", func(t *testing.T) {
		target := listenSock(t, r.socks)
		r.writeKey(t, target, strings.Repeat("ef", 16), "1")
		_, err := r.p.Send(testutil.Context(t, 10*time.Second), message.Message{ID: uuid.NewString(), To: target.addr, ToPID: os.Getpid(), Body: "hi", Mode: message.ModePrompting})
		if !errors.Is(err, ErrStaleKey) {
			t.Fatalf("err = %v, want ErrStaleKey", err)
		}
	})
}

func TestValidNameStatesTheRealLimit(t *testing.T) {
	if err := validName(strings.Repeat("é", MaxNameRunes)); err != nil {
		t.Fatalf("a 64 code point name was refused: %v", err)
	}
	err := validName(strings.Repeat("é", MaxNameRunes+1))
	if err == nil {
		t.Fatal("a 65 code point name was accepted")
	}
	if !strings.Contains(err.Error(), "use 1-64 characters") {
		t.Fatalf("error %q does not state the 64 character limit", err)
	}
}

func TestAKeyIsStaleOnlyWhenAnotherProcessHoldsItsPid(t *testing.T) {
	me := os.Getpid()
	ticks, err := uds.StartTicks(me)
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		pid       int
		procStart string
		want      bool
	}{
		{"the process that wrote it is still running", me, strconv.FormatUint(ticks, 10), false},
		{"another process holds the pid now", me, "1", true},
		{"another process, told by ps's spelling", me, "Thu Jan  1 00:00:00 1970", true},
		{"the pid is free: nothing to tell", gone.Process.Pid, "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second ask takes the pinned path
				if got := staleKey(tt.pid, tt.procStart); got != tt.want {
					t.Fatalf("staleKey(%d, %q) = %v, want %v", tt.pid, tt.procStart, got, tt.want)
				}
			}
		})
	}
}
