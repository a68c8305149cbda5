package qwen

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// sink is a bare inbox that accepts one connection at a time, for reading
// exactly what a peer wrote.
type sink struct {
	ln   *net.UnixListener
	path string
}

func newSink(t *testing.T) *sink {
	t.Helper()
	dir := testutil.ShortTempDir(t)
	path := filepath.Join(dir, "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &sink{ln: ln, path: path}
}

// next reads the lines of the next connection; ok false when none is
// waiting within wait.
func (s *sink) next(t *testing.T, wait time.Duration) (lines []Line, ok bool) {
	t.Helper()
	_ = s.ln.SetDeadline(time.Now().Add(wait))
	c, err := s.ln.Accept()
	if err != nil {
		return nil, false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		l, err := ParseLine(sc.Bytes())
		if err != nil {
			t.Fatalf("unparsable line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines, true
}

func registerTestPeer(t *testing.T, cfg Config) *Leg {
	t.Helper()
	run := testutil.ShortTempDir(t)
	if cfg.Home == "" {
		cfg.Home = filepath.Join(run, "qwen")
	}
	if cfg.RuntimeDir == "" {
		cfg.RuntimeDir = run
	}
	cfg.TmpDir = run
	p, err := Register(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.emitter.Attached() { // never run: nothing else cleans up
			p.ln.Close()
			os.Remove(p.RecordPath())
		}
	})
	return p
}

func TestRelayMapsWhatTheOtherLegSaidToAQwenReceipt(t *testing.T) {
	tests := []struct {
		name     string
		rc       message.Receipt
		want     Status // 0: nothing is sent
		wantDrop message.DropReason
	}{
		{"delivered stays delivered", message.Receipt{Status: message.StatusDelivered}, StatusDelivered, 0},
		{"held stays held", message.Receipt{Status: message.StatusHeld}, StatusHeld, 0},
		{"denied stays denied", message.Receipt{Status: message.StatusDenied}, StatusDenied, 0},
		{"refused stays refused", message.Receipt{Status: message.StatusRefused}, StatusRefused, 0},
		{"expired stays expired", message.Receipt{Status: message.StatusExpired}, StatusExpired, 0},
		{"misaddressed stays misaddressed", message.Receipt{Status: message.StatusMisaddressed}, StatusMisaddressed, 0},
		{"a drop keeps a reason Qwen knows", message.Receipt{Status: message.StatusDropped, DropReason: message.DropRateLimited}, StatusDropped, message.DropRateLimited},
		{"a queue-full drop stays queue-full", message.Receipt{Status: message.StatusDropped, DropReason: message.DropQueueFull}, StatusDropped, message.DropQueueFull},
		{"a drop for a reason Qwen lacks goes without one", message.Receipt{Status: message.StatusDropped, DropReason: message.DropHopLoop}, StatusDropped, 0},
		{"failed, which Qwen lacks, is expired: unsent, send again later", message.Receipt{Status: message.StatusFailed, Reason: "no leg"}, StatusExpired, 0},
		{"sent is no receipt at all", message.Receipt{Status: message.StatusSent}, 0, 0},
	}
	p := registerTestPeer(t, Config{})
	s := newSink(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "5d0d1c8e-0000-4000-8000-0000000000" + string(rune('a'+i/10)) + string(rune('0'+i%10))
			p.al.remember(id, replyTo{from: s.path, token: "reply-token"})
			p.Relay(context.Background(), message.Message{ID: id}, tt.rc)
			p.wg.Wait()
			lines, ok := s.next(t, 200*time.Millisecond)
			if tt.want == 0 {
				if ok {
					t.Fatalf("sent %+v", lines)
				}
				return
			}
			if !ok || len(lines) != 2 || lines[0].Auth == nil || lines[1].Status == nil {
				t.Fatalf("wrote %+v, want an auth line and a receipt", lines)
			}
			if string(lines[0].Auth.Token) != "reply-token" {
				t.Fatal("the receipt does not present the sender's replyToken")
			}
			f := lines[1].Status
			if f.Status != tt.want || f.OrigMsgID != id || f.DropReason != tt.wantDrop || f.From != p.SocketPath() {
				t.Fatalf("receipt %+v, want %v (%v) about %s from our inbox", f, tt.want, tt.wantDrop, id)
			}
		})
	}
	t.Run("a message that did not come to an alias draws no receipt", func(t *testing.T) {
		p.Relay(context.Background(), message.Message{ID: "5d0d1c8e-0000-4000-8000-00000000ffff"}, message.Receipt{Status: message.StatusDelivered})
		p.wg.Wait()
		if lines, ok := s.next(t, 200*time.Millisecond); ok {
			t.Fatalf("sent %+v", lines)
		}
	})
}
