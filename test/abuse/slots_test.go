package abuse

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// TestJunkConnectionsLeaveRoomForAPeer holds junk connections open on both
// local legs from this process, a blank line on each every half second,
// while a legitimate peer in another process sends its messages one
// connection each. Before per-peer limits the junk took all 64 slots, the
// peer delivered 0 of its messages, and the gateway accepted and closed its
// connections after the writes had "succeeded"; now one process holds at
// most 8 slots, blank lines extend nothing, and every message arrives.
func TestJunkConnectionsLeaveRoomForAPeer(t *testing.T) {
	const (
		junk  = 200 // per leg, from this process
		legit = 15  // messages per leg, from the child
	)
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "slots")
	claude, qwen := claudeSocket(t, g), qwenSocket(t, g)
	token, sid := qwenInbox(t, w, g.PID)
	events := g.WatchCLI(t)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for _, sock := range []string{claude, qwen} {
		for range junk {
			c := dialUnix(t, sock)
			wg.Go(func() {
				defer c.Close()
				for {
					if _, err := c.Write([]byte("\n")); err != nil {
						return // closed by the gateway
					}
					select {
					case <-stop:
						return
					case <-time.After(500 * time.Millisecond):
					}
				}
			})
		}
	}
	time.Sleep(200 * time.Millisecond) // let the gateway take what it will of the junk

	sent := map[string]int{}
	for _, leg := range []struct{ kind, sock string }{{"claude", claude}, {"qwen", qwen}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLegitPeerHelper$")
		cmd.Env = append(os.Environ(), "ABUSE_LEGIT_KIND="+leg.kind, "ABUSE_LEGIT_SOCK="+leg.sock,
			"ABUSE_LEGIT_TOKEN="+token, "ABUSE_LEGIT_SESSION="+sid, "ABUSE_LEGIT_N="+strconv.Itoa(legit))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("legitimate %s peer: %v\n%s", leg.kind, err, out)
		}
		ok := strings.Count(string(out), "SENT ")
		sent[leg.kind] = ok
		t.Logf("%s: the child's sends that reported success: %d of %d", leg.kind, ok, legit)
	}

	arrived := func(kind string) int {
		n := 0
		for i := range legit {
			body := fmt.Sprintf("legit %s %d", kind, i)
			if _, ok := events.Find(func(ev message.Event) bool {
				switch {
				case ev.Message != nil:
					return ev.Message.Body == body
				case ev.Held != nil:
					return ev.Held.Message.Body == body
				}
				return false
			}); ok {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && (arrived("claude") < legit || arrived("qwen") < legit) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, kind := range []string{"claude", "qwen"} {
		got := arrived(kind)
		t.Logf("%s: %d of %d delivered or held while %d junk connections were open", kind, got, legit, junk)
		if got != legit {
			t.Errorf("%s: the legitimate peer got %d of %d messages through (%d sends reported success)", kind, got, legit, sent[kind])
		}
		if sent[kind] > got {
			t.Errorf("%s: %d sends reported success, %d arrived: writes were taken and dropped", kind, sent[kind], got)
		}
	}
}

// TestLegitPeerHelper is the legitimate peer of
// TestJunkConnectionsLeaveRoomForAPeer, run in a child process so that its
// pid is not the junk's. It does nothing in a normal run.
func TestLegitPeerHelper(t *testing.T) {
	kind, sock := os.Getenv("ABUSE_LEGIT_KIND"), os.Getenv("ABUSE_LEGIT_SOCK")
	if sock == "" {
		t.Skip("only run as a child of TestJunkConnectionsLeaveRoomForAPeer")
	}
	n, _ := strconv.Atoi(os.Getenv("ABUSE_LEGIT_N"))
	for i := range n {
		body := fmt.Sprintf("legit %s %d", kind, i)
		var lines []any
		if kind == "qwen" {
			lines = []any{
				map[string]any{"msgV": 1, "type": "auth", "token": os.Getenv("ABUSE_LEGIT_TOKEN")},
				map[string]any{"msgV": 1, "type": "user", "msgId": uuid.NewString(), "fromMode": "prompting",
					"toSessionId": os.Getenv("ABUSE_LEGIT_SESSION"), "message": map[string]any{"role": "user", "content": body}},
			}
		} else {
			lines = []any{map[string]any{"msgV": 1, "type": "user", "msg_id": uuid.NewString(),
				"message": map[string]any{"role": "user", "content": body}}}
		}
		if err := sendLines(sock, lines); err != nil {
			fmt.Printf("FAILED %d: %v\n", i, err)
			continue
		}
		fmt.Printf("SENT %d\n", i)
	}
}

// sendLines writes one message as a peer does: connect, write, half-close,
// wait for the receiver to close. A reset or a timeout is a failure the
// sender sees.
func sendLines(sock string, lines []any) error {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var buf []byte
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	if _, err := c.Write(buf); err != nil {
		return err
	}
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, c)
	return err
}

// qwenInbox reads the ipcToken and sessionId of the gateway's record in the
// World's Qwen home.
func qwenInbox(tb testing.TB, w *gatewaytest.World, pid int) (token, sessionID string) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(w.QwenHome, "sessions", "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var rec struct {
				PID       int    `json:"pid"`
				IPCToken  string `json:"ipcToken"`
				SessionID string `json:"sessionId"`
			}
			if json.Unmarshal(b, &rec) == nil && rec.PID == pid && rec.IPCToken != "" {
				return rec.IPCToken, rec.SessionID
			}
		}
	}
	tb.Fatalf("no Qwen record with a token for pid %d", pid)
	return "", ""
}
