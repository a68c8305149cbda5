package claude

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

const dialEnv = "CLAUDE_TEST_DIAL"

// runDialer writes its stdin to the socket at path on one connection: a
// sender that is another process than the test.
func runDialer(path string) int {
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := uds.DialWrite(ctx, path, b); err != nil {
		return 1
	}
	return 0
}

// dialFromAnotherProcess sends lines to path from a child process and
// returns its pid.
func dialFromAnotherProcess(t *testing.T, path string, lines ...[]byte) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), dialEnv+"="+path)
	cmd.Stdin = bytes.NewReader(append(bytes.Join(lines, []byte("\n")), '\n'))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process could not send: %v %s", err, out)
	}
	return cmd.Process.Pid
}

// The reply address a frame names gets receipts only if the connecting
// process owns that socket (SO_PEERCRED against /proc): otherwise anyone
// could aim our receipts and idle notices at a socket of their choosing.
func TestReceiptsGoOnlyToAReplySocketTheSenderOwns(t *testing.T) {
	tests := []struct {
		name      string
		other     bool // send from another process than the one owning the socket
		wantReply bool
	}{
		{"a sender owning its reply socket gets the held receipt", false, true},
		{"a sender naming a socket another process owns gets nothing", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startRig(t, Config{})
			s := listenSock(t, r.socks) // owned by the test process
			id, frame := s.userFrame(t, "bypass", "hold me "+uuid.NewString()[:8])
			if tt.other {
				dialFromAnotherProcess(t, r.p.SocketPath(), frame)
			} else {
				dial(t, r.p.SocketPath(), frame)
			}
			r.next(t, func(ev message.Event) bool { return ev.Type == message.EventHeld && ev.Held.Message.ID == id })
			if tt.wantReply {
				s.waitFrame(t, func(f Frame) bool { return f.OrigMsgID == id && f.Status == WireHeld })
				return
			}
			time.Sleep(300 * time.Millisecond) // a receipt is written at once when it is written at all
			s.settle(t)
			for _, f := range s.frames(t) {
				if f.OrigMsgID == id {
					t.Fatalf("a receipt went to a socket the sender does not own: %+v", f)
				}
			}
			if !r.logs.has("unvettable") {
				t.Errorf("nothing logged about the unvettable reply address")
			}
		})
	}
}

func TestIdleNoticesGoOnlyToASubscriberThatOwnsItsSocket(t *testing.T) {
	r := startRig(t, Config{})
	s := listenSock(t, r.socks)
	sub := uuid.NewString()
	dialFromAnotherProcess(t, r.p.SocketPath(), marshal(t, NewNotifyWhenIdle(s.addr, sub, "prompting")))
	time.Sleep(300 * time.Millisecond)
	s.settle(t)
	for _, f := range s.frames(t) {
		if f.OrigMsgID == sub {
			t.Fatalf("an idle notice went to a socket the subscriber does not own: %+v", f)
		}
	}
	// The same subscription from the owner is answered.
	own := uuid.NewString()
	dial(t, r.p.SocketPath(), marshal(t, NewNotifyWhenIdle(s.addr, own, "prompting")))
	s.waitFrame(t, func(f Frame) bool { return f.OrigMsgID == own && f.Action == ActionPeerIdleNotice })
}
