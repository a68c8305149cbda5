package abuse

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/transport/uds"
	"github.com/sessiongateway/gateway/transport/uds/qwen"
)

// victimEnv makes the test binary a victim session process: it listens at
// the path it names, says "ready", prints the bytes each connection brought
// (one line per connection, in the order accepted) and exits when its stdin
// closes.
const victimEnv = "ABUSE_TEST_VICTIM"

func init() {
	if path := os.Getenv(victimEnv); path != "" {
		os.Exit(runVictim(path))
	}
}

func runVictim(path string) int {
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		n, _ := io.Copy(io.Discard, io.LimitReader(c, 1<<20))
		c.Close()
		fmt.Println(n)
	}
}

// startVictim runs a victim process listening at path; counts yields the
// byte count of each connection it accepted.
func startVictim(t *testing.T, path string) (counts <-chan int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), victimEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the victim did not start: %q", sc.Text())
	}
	out := make(chan int64, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			n, _ := strconv.ParseInt(sc.Text(), 10, 64)
			out <- n
		}
	}()
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait(); <-done })
	return out
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
