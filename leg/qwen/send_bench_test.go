package qwen

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// BenchmarkSend is the leg's own share of a send to a Qwen inbox: the
// target's record found and judged, the frame built, the listener checked,
// written, and the inbox's close awaited. The inbox is a bare listener of
// this process that reads to EOF and closes, so what is timed is the leg.
func BenchmarkSend(b *testing.B) {
	home, run := b.TempDir(), b.TempDir()
	p, err := Register(Config{Name: "gateway", Home: home, RuntimeDir: run, TmpDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan message.Event, 64)
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx, events) }()
	b.Cleanup(func() { cancel(); <-done })
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-events:
			}
		}
	}()
	sid, path := benchInbox(b, home, run)
	m := message.Message{To: "uds:" + path, ToSessionID: sid, Body: "bench", Mode: message.ModePrompting, Unpaced: true}
	b.ReportAllocs()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		m.ID = uuid.NewString()
		if _, err := p.Send(ctx, m); err != nil {
			b.Fatal(err)
		}
		n++
	}
	// Processor time, the inbox's included: on a loaded machine it moves
	// less than the time per send does.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n), "cpu-ns/op")
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchInbox listens at a socket of its own under run, publishes a record
// of this process for it in home, and returns its session id and path.
func benchInbox(b *testing.B, home, run string) (sid, path string) {
	b.Helper()
	dir := filepath.Join(run, "sink")
	if err := safefile.EnsureDir(dir); err != nil {
		b.Fatal(err)
	}
	path = filepath.Join(dir, "in.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	b.Cleanup(func() { ln.Close(); <-served })
	pid := os.Getpid()
	ns, start := identity(b)
	sid = uuid.NewString()
	rec := Record{PID: pid, ProcStart: start, PidNS: ns, SessionID: sid, Cwd: "/", Name: "sink",
		StartedAt: time.Now().UnixMilli(), Kind: KindExternal, IPCPath: path, IPCToken: NewIPCToken()}
	raw, err := rec.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(SessionsDir(home), RecordFileName(pid, NewSuffix()))
	if err := safefile.WriteAtomic(file, raw); err != nil {
		b.Fatal(err)
	}
	// Written a while ago, as a session's record is when messages come:
	// a file changed within the last moments is read again every time.
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{file, SessionsDir(home)} {
		if err := os.Chtimes(f, old, old); err != nil {
			b.Fatal(err)
		}
	}
	return sid, path
}

// A record file that now names a send's inbox is found by the next send,
// though sends skipped it unread while it named another: renamed over
// (which changes the listing) or edited in place (which does not).
func TestASendFindsARecordThatNowNamesItsInbox(t *testing.T) {
	tests := []struct {
		name    string
		inPlace bool
	}{
		{"renamed over a record of another inbox (how Qwen Code writes)", false},
		{"edited in place, the directory unchanged (how another writer may)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { sendFindsRecord(t, tt.inPlace) })
	}
}

func sendFindsRecord(t *testing.T, inPlace bool) {
	identity(t)
	home, run := t.TempDir(), t.TempDir()
	p, err := Register(Config{Name: "gateway", Home: home, RuntimeDir: run, TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	runPeer(t, p)
	dir := SessionsDir(home)
	pid := os.Getpid()
	inbox := func(name string) (string, *recorder) {
		d := filepath.Join(run, name)
		if err := safefile.EnsureDir(d); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(d, "in.sock")
		return path, record(t, path)
	}
	pathA, a := inbox("a")
	pathB, _ := inbox("b")
	start, _ := ProcStartToken(pid)
	ns, _ := uds.PidNamespace(pid)
	rec := func(sid, ipc string) []byte {
		b, err := Record{PID: pid, ProcStart: start, PidNS: ns, SessionID: sid, Cwd: "/", Name: "r",
			StartedAt: 1, Kind: KindExternal, IPCPath: ipc, IPCToken: NewIPCToken()}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fileA, fileB := filepath.Join(dir, RecordFileName(pid, NewSuffix())), filepath.Join(dir, RecordFileName(pid, NewSuffix()))
	sidA, sidB := uuid.NewString(), uuid.NewString()
	ago := time.Hour
	write := func(file string, b []byte) { // and let it age, with its directory
		t.Helper()
		if err := safefile.WriteAtomic(file, b); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-ago)
		ago += time.Hour // a later change leaves an mtime other than the last
		for _, f := range []string{file, dir} {
			if err := os.Chtimes(f, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(fileA, rec(sidA, pathA))
	write(fileB, rec(sidB, pathB))
	send := func(sid string) {
		t.Helper()
		m := message.Message{ID: uuid.NewString(), To: "uds:" + pathA, ToSessionID: sid, Body: "hi " + sid, Mode: message.ModePrompting, Unpaced: true}
		if _, err := p.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	send(sidA)
	send(sidA) // the record of inbox b is skipped unread now
	sidC := uuid.NewString()
	// b's record file now names inbox a, for another session
	if inPlace {
		if err := os.WriteFile(fileB, rec(sidC, pathA), 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-ago)
		if err := os.Chtimes(fileB, old, old); err != nil {
			t.Fatal(err)
		}
	} else {
		write(fileB, rec(sidC, pathA))
	}
	send(sidC)
	want := `"toSessionId":"` + sidC + `"`
	deadline := time.Now().Add(10 * time.Second)
	for !bytes.Contains(a.bytes(), []byte(want)) {
		if time.Now().After(deadline) {
			t.Fatalf("inbox a never got a frame pinned to the renamed record's session; got:\n%s", a.bytes())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
