package qwen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// listenEnv makes the test binary a process that listens at the path it
// names, says "ready", prints how many bytes each connection brought, one
// line per connection in the order accepted, and exits when its stdin closes.
const listenEnv = "QWEN_TEST_LISTEN"

// otherProcess is a second process listening at path.
type otherProcess struct {
	pid    int
	path   string
	counts <-chan int64
}

func listenInOtherProcess(t *testing.T, path string) *otherProcess {
	t.Helper()
	pid, counts := testutil.CountingListener(t, listenEnv+"="+path)
	return &otherProcess{pid: pid, path: path, counts: counts}
}

// bytesBeforeSentinel writes a sentinel on a connection of our own and
// returns the byte counts of every connection accepted before it.
func (o *otherProcess) bytesBeforeSentinel(t *testing.T) []int64 {
	t.Helper()
	const sentinel = "sentinel\n"
	if err := uds.DialWrite(context.Background(), o.path, []byte(sentinel)); err != nil {
		t.Fatal(err)
	}
	var before []int64
	for {
		select {
		case n := <-o.counts:
			if n == int64(len(sentinel)) {
				return before
			}
			before = append(before, n)
		case <-time.After(10 * time.Second): // a hang detector
			t.Fatal("the sentinel never reached the listener process")
		}
	}
}

// recorder is a socket of the test process that keeps every byte sent to it.
type recorder struct {
	path string
	mu   sync.Mutex
	got  bytes.Buffer
}

func record(t *testing.T, path string) *recorder {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{path: path}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(c)
			c.Close()
			r.mu.Lock()
			r.got.Write(b)
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return r
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.got.Bytes())
}

func plantRecord(t *testing.T, dir string, pid int, ipcPath string) Record {
	t.Helper()
	ns, _ := identity(t)
	start, ok := ProcStartToken(pid)
	if !ok {
		t.Fatal("no start token for a child")
	}
	rec := Record{PID: pid, ProcStart: start, PidNS: ns, SessionID: uuid.NewString(), Cwd: "/", Name: "planted-" + strconv.Itoa(pid),
		StartedAt: 1, Kind: KindTUI, IPCPath: ipcPath, IPCToken: NewIPCToken()}
	b, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := safefile.WriteAtomic(filepath.Join(dir, RecordFileName(pid, "")), b); err != nil {
		t.Fatal(err)
	}
	return rec
}

func listedPIDs(t *testing.T, p *Leg) []int {
	t.Helper()
	ss, err := p.Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, s := range ss {
		pids = append(pids, s.PID)
	}
	return pids
}

// A record anyone of ours can write may name any socket as its inbox. One
// whose inbox another process listens on is neither listed nor sent to,
// and our replyToken never reaches it.
func TestNothingIsSentToAnInboxItsRecordDoesNotHold(t *testing.T) {
	identity(t)
	p := registerTestPeer(t, Config{})
	runPeer(t, p)
	dir := filepath.Dir(p.RecordPath())
	socks := testutil.ShortTempDir(t)

	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	planted := record(t, filepath.Join(socks, "planted.sock")) // the test process listens
	bad := plantRecord(t, dir, sleeper.Process.Pid, planted.path)

	real := listenInOtherProcess(t, filepath.Join(socks, "real.sock")) // listens on its own inbox
	good := plantRecord(t, dir, real.pid, real.path)

	pids := listedPIDs(t, p)
	if slices.Contains(pids, bad.PID) || !slices.Contains(pids, good.PID) {
		t.Fatalf("listed %v: want %d (its own inbox) and not %d (another's)", pids, good.PID, bad.PID)
	}
	_, err := p.Send(context.Background(), message.Message{ID: uuid.NewString(), To: addressing.UDS(planted.path), ToSessionID: bad.SessionID, Body: "x", Unpaced: true})
	if !errors.Is(err, uds.ErrNotHolder) {
		t.Fatalf("Send to the planted record = %v, want ErrNotHolder", err)
	}
	if _, err := p.Send(context.Background(), message.Message{ID: uuid.NewString(), To: addressing.UDS(real.path), ToSessionID: good.SessionID, Body: "x", Unpaced: true}); err != nil {
		t.Fatalf("Send to a record's own inbox = %v", err)
	}
	if n := real.bytesBeforeSentinel(t); len(n) < 2 || n[len(n)-1] == 0 {
		t.Fatalf("the real inbox got %v bytes per connection, want its probe and the message", n)
	}
	if got := planted.bytes(); len(got) != 0 || bytes.Contains(got, []byte(p.token)) {
		t.Fatalf("the planted socket read %q", got)
	}
}

// A sender's from is a claim: receipts (with the replyToken the sender
// chose) go to it only when the sending process listens there, so no one
// can reflect a token of their choosing at another session's inbox.
func TestReceiptsGoOnlyToAnInboxTheSenderListensOn(t *testing.T) {
	identity(t)
	p := registerTestPeer(t, Config{Inbound: PolicyAccept})
	events, stop := runPeer(t, p)
	socks := testutil.ShortTempDir(t)
	victim := listenInOtherProcess(t, filepath.Join(socks, "victim.sock"))
	own := record(t, filepath.Join(socks, "own.sock"))
	tok := readRecord(t, p.RecordPath()).IPCToken

	send := func(from string) string {
		id := uuid.NewString()
		f := UserFrame{MsgID: id, From: from, FromName: "x", FromMode: message.ModePrompting, ToSessionID: p.SessionID(),
			Content: "hi", ReplyToken: NewIPCToken()}
		b, err := Payload(tok, f)
		if err != nil {
			t.Fatal(err)
		}
		writeAndWait(t, p.SocketPath(), b)
		return id
	}
	reflected := send(victim.path)
	answered := send(own.path)
	for ev := range within(t, events) {
		if ev.Type == message.EventMessage && ev.Message.ID == answered {
			break
		}
	}
	stop() // waits for the receipt dials in flight
	if !bytes.Contains(own.bytes(), []byte(answered)) {
		t.Fatalf("the sender's own inbox got no receipt: %q", own.bytes())
	}
	for _, n := range victim.bytesBeforeSentinel(t) {
		if n != 0 {
			t.Fatalf("a receipt for %s reached another process's inbox (%d bytes)", reflected, n)
		}
	}
}

// The sessions directory can be opened to others while we run: its
// records are then neither listed nor sent to, it is left as it is, and
// the reason is logged.
func TestASessionsDirectoryOthersMayWriteIsRefusedWhileRunning(t *testing.T) {
	identity(t)
	var logs bytes.Buffer
	var mu sync.Mutex
	p := registerTestPeer(t, Config{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	runPeer(t, p)
	dir := filepath.Dir(p.RecordPath())
	real := listenInOtherProcess(t, filepath.Join(testutil.ShortTempDir(t), "real.sock"))
	good := plantRecord(t, dir, real.pid, real.path)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sessions(context.Background()); !errors.Is(err, uds.ErrUnsafeRegistry) {
		t.Fatalf("Sessions = %v, want ErrUnsafeRegistry", err)
	}
	_, err := p.Send(context.Background(), message.Message{ID: uuid.NewString(), To: addressing.UDS(real.path), ToSessionID: good.SessionID, Body: "x", Unpaced: true})
	if !errors.Is(err, uds.ErrUnsafeRegistry) {
		t.Fatalf("Send = %v, want ErrUnsafeRegistry", err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o777 {
		t.Fatalf("the directory was changed: %v %v", fi.Mode(), err)
	}
	mu.Lock()
	logged := bytes.Contains(logs.Bytes(), []byte("session registry directory refused"))
	mu.Unlock()
	if !logged {
		t.Error("the refusal was not logged")
	}
	if n := real.bytesBeforeSentinel(t); len(n) != 0 {
		t.Fatalf("the inbox was dialed through a refused directory: %v", n)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if pids := listedPIDs(t, p); !slices.Contains(pids, good.PID) {
		t.Fatalf("after the repair, listed %v, want %d", pids, good.PID)
	}
}

func TestRegisterRefusesASessionsDirectoryOthersMayWrite(t *testing.T) {
	home := filepath.Join(t.TempDir(), "qwen")
	if err := os.MkdirAll(SessionsDir(home), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(SessionsDir(home), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Register(Config{Home: home, RuntimeDir: testutil.ShortTempDir(t), TmpDir: testutil.ShortTempDir(t)}); !errors.Is(err, uds.ErrUnsafeRegistry) {
		t.Fatalf("Register = %v, want ErrUnsafeRegistry", err)
	}
}

// A frame without a from names no sender: the message has no from at all,
// not the address "uds:".
func TestAMessageWithoutAFromHasNoFrom(t *testing.T) {
	p := registerTestPeer(t, Config{Inbound: PolicyAccept})
	events, _ := runPeer(t, p)
	id := uuid.NewString()
	b, err := Payload(readRecord(t, p.RecordPath()).IPCToken,
		UserFrame{MsgID: id, FromMode: message.ModePrompting, ToSessionID: p.SessionID(), Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	writeAndWait(t, p.SocketPath(), b)
	for ev := range within(t, events) {
		if ev.Type == message.EventMessage && ev.Message.ID == id {
			if ev.Message.From != "" {
				t.Fatalf("from = %q, want none", ev.Message.From)
			}
			return
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
