package abuse

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// victimEnv makes the test binary a victim session process
// (testutil.RunCountingListener): it listens at the path it names and reports
// the bytes each connection brought.
const victimEnv = "ABUSE_TEST_VICTIM"

func init() {
	if path := os.Getenv(victimEnv); path != "" {
		os.Exit(testutil.RunCountingListener(path))
	}
}

// startVictim runs a victim process listening at path; counts yields the
// byte count of each connection it accepted.
func startVictim(t *testing.T, path string) (counts <-chan int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	_, counts = testutil.CountingListener(t, victimEnv+"="+path)
	return counts
}

// A sender's from is a claim. A message naming another process's inbox as
// its from, with a replyToken of the sender's choosing, must not make the
// gateway write that token (or anything) to that inbox as a receipt: the
// sender could aim an auth line of its choice at any session.
func TestReceiptsAreNotReflectedAtAnotherProcess(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gw")
	b, err := os.ReadFile(filepath.Join(qwen.SessionsDir(w.QwenHome), qwen.RecordFileName(g.PID, "")))
	if err != nil {
		t.Fatalf("the gateway's qwen record: %v", err)
	}
	gw, err := qwen.ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	victimPath := filepath.Join(w.Root, "victim", "1.sock")
	victim := startVictim(t, victimPath)
	own := plantSocket(t, filepath.Join(w.Root, "own"))

	const rounds = 5 // reflections tried
	chosen := qwen.NewIPCToken()
	send := func(from string) string {
		f := qwen.UserFrame{MsgID: uuid.NewString(), From: from, ReplyToken: chosen, FromName: "x",
			FromMode: message.ModeBypass, ToSessionID: gw.SessionID, Content: "hello " + uuid.NewString()[:8]}
		payload, err := qwen.Payload(gw.IPCToken, f)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := uds.DialWrite(ctx, gw.IPCPath, payload); err != nil {
			t.Fatal(err)
		}
		return f.MsgID
	}
	for range rounds {
		send(victimPath)
	}
	last := send(own.path) // the sender's own inbox: answered
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, got := own.read(); bytes.Contains(got, []byte(last)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sender's own inbox never got its receipt")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // receipts are dialed at once, in parallel: let the others land

	// A sentinel of our own: every connection the victim accepted before
	// it has been counted.
	const sentinel = "sentinel\n"
	if err := uds.DialWrite(context.Background(), victimPath, []byte(sentinel)); err != nil {
		t.Fatal(err)
	}
	var reflected, conns int64
	for done := false; !done; {
		select {
		case n := <-victim:
			if n == int64(len(sentinel)) {
				done = true
				continue
			}
			conns++
			reflected += n
		case <-time.After(10 * time.Second): // a hang detector
			t.Fatal("the sentinel never reached the victim")
		}
	}
	t.Logf("%d messages naming the victim's inbox: the victim saw %d connections, %d bytes", rounds, conns, reflected)
	if reflected != 0 {
		t.Fatalf("receipts carrying the sender's chosen token reached another process's inbox: %d bytes in %d connections", reflected, conns)
	}
}
