package qwen

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/clock"
)

// The record and inbox files as a Leg writes, keeps and removes them.

// identity is this process's pid namespace and start token. Off Linux,
// where there are none, the test is skipped; on Linux their absence fails
// it.
func identity(tb testing.TB) (ns uint64, start string) {
	tb.Helper()
	var host HostFacts
	ns, ok1 := host.PidNS()
	start, ok2 := host.ProcStart(os.Getpid())
	if !ok1 || !ok2 {
		if runtime.GOOS != "linux" {
			tb.Skip("no process identity off Linux")
		}
		tb.Fatalf("no process identity on Linux: pid namespace %d %v, start %q %v", ns, ok1, start, ok2)
	}
	return ns, start
}

// runPeer runs p until the test ends (or stop is called) and returns its
// events.
func runPeer(t *testing.T, p *Leg) (events <-chan message.Event, stop func()) {
	t.Helper()
	ch := make(chan message.Event, 256)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, ch) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(10 * time.Second)
	for p.Ready() != nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return ch, stop
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

func TestOurRecordFile(t *testing.T) {
	identity(t)

	t.Run("is 0600, in a 0700 directory, named <pid>.json", func(t *testing.T) {
		p := registerTestPeer(t, Config{})
		runPeer(t, p)
		if m := mode(t, p.RecordPath()); !m.IsRegular() || m.Perm() != 0o600 {
			t.Fatalf("record mode %v, want a 0600 regular file", m)
		}
		if m := mode(t, filepath.Dir(p.RecordPath())); m.Perm() != 0o700 {
			t.Fatalf("sessions directory mode %v, want 0700", m)
		}
		if got := filepath.Base(p.RecordPath()); got != strconv.Itoa(os.Getpid())+".json" {
			t.Fatalf("record named %s", got)
		}
		rec := readRecord(t, p.RecordPath())
		if rec.SessionID != p.SessionID() || rec.IPCPath != p.SocketPath() || rec.Kind != KindExternal || !isHexToken(string(rec.IPCToken), 64) {
			t.Fatalf("record = %+v", rec)
		}
	})

	t.Run("holds exactly the spec's keys, with a null qwenVersion and kind external", func(t *testing.T) {
		p := registerTestPeer(t, Config{})
		runPeer(t, p)
		b, err := os.ReadFile(p.RecordPath())
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		keys := slices.Sorted(maps.Keys(raw))
		wantKeys := []string{"cwd", "ipcPath", "ipcToken", "kind", "name", "pid", "pidNs", "procStart", "qwenVersion", "schemaVersion", "sessionId", "startedAt"}
		if !slices.Equal(keys, wantKeys) {
			t.Fatalf("keys %v, want %v", keys, wantKeys)
		}
		for key, want := range map[string]string{"qwenVersion": `null`, "kind": `"external"`, "schemaVersion": `1`} {
			if got := string(raw[key]); got != want {
				t.Errorf("%s is %s, want %s", key, got, want)
			}
		}
	})

	t.Run("and its aliases' records are removed when it stops, as are its inbox", func(t *testing.T) {
		p := registerTestPeer(t, Config{})
		_, stop := runPeer(t, p)
		other := message.Session{Address: "uds:/tmp/cc-socks/9.sock", Protocol: message.ProtocolClaude, Name: "work-08", SessionID: uuid.NewString()}
		if err := p.SyncAliases(context.Background(), []message.Session{other}); err != nil {
			t.Fatal(err)
		}
		var aliasFile string
		p.al.mu.Lock()
		for _, al := range p.al.byKey {
			aliasFile = al.path
		}
		p.al.mu.Unlock()
		if aliasFile == "" || mode(t, aliasFile).Perm() != 0o600 {
			t.Fatal("no 0600 alias record was written")
		}
		if !regexp.MustCompile(`^` + strconv.Itoa(os.Getpid()) + `-[0-9a-f]{8}\.json$`).MatchString(filepath.Base(aliasFile)) {
			t.Fatalf("alias record named %s, want <pid>-<8 hex>.json", filepath.Base(aliasFile))
		}
		stop()
		for _, f := range []string{p.RecordPath(), aliasFile, p.SocketPath()} {
			if _, err := os.Lstat(f); !os.IsNotExist(err) {
				t.Errorf("%s is still there after Run returned (%v)", f, err)
			}
		}
	})

	t.Run("takes <pid>-<8 hex>.json when <pid>.json is a live process's", func(t *testing.T) {
		first := registerTestPeer(t, Config{})
		runPeer(t, first)
		before, _ := os.ReadFile(first.RecordPath())
		second := registerTestPeer(t, Config{Home: filepath.Dir(filepath.Dir(first.RecordPath()))})
		if filepath.Dir(second.RecordPath()) != filepath.Dir(first.RecordPath()) {
			t.Fatal("the two peers do not share a home")
		}
		if !regexp.MustCompile(`^` + strconv.Itoa(os.Getpid()) + `-[0-9a-f]{8}\.json$`).MatchString(filepath.Base(second.RecordPath())) {
			t.Fatalf("second record named %s", filepath.Base(second.RecordPath()))
		}
		after, _ := os.ReadFile(first.RecordPath())
		if string(before) != string(after) {
			t.Fatal("the live record at <pid>.json was overwritten")
		}
	})

	t.Run("replaces <pid>.json left by an earlier process with our pid", func(t *testing.T) {
		ns, start := identity(t)
		home := filepath.Join(t.TempDir(), "qwen")
		boot, ticks, _ := strings.Cut(start, ":")
		n, _ := strconv.Atoi(ticks)
		stale := Record{PID: os.Getpid(), ProcStart: boot + ":" + strconv.Itoa(n-1), PidNS: ns, SessionID: uuid.NewString(),
			Cwd: "/", Name: "old", StartedAt: 1, Kind: "tui"}
		b, _ := stale.Marshal()
		if err := safefile.EnsureDir(SessionsDir(home)); err != nil {
			t.Fatal(err)
		}
		bare := filepath.Join(SessionsDir(home), RecordFileName(os.Getpid(), ""))
		if err := safefile.WriteAtomic(bare, b); err != nil {
			t.Fatal(err)
		}
		p := registerTestPeer(t, Config{Home: home})
		if p.RecordPath() != bare || readRecord(t, bare).SessionID != p.SessionID() {
			t.Fatalf("record at %s, want the stale %s replaced", p.RecordPath(), bare)
		}
	})
}

func TestOurInboxTakesASiblingNameWhenItsOwnIsLive(t *testing.T) {
	identity(t)
	run := testutil.ShortTempDir(t)
	first := registerTestPeer(t, Config{RuntimeDir: run})
	runPeer(t, first)
	want := filepath.Join(run, SocketDirName, strconv.Itoa(os.Getpid())+".sock")
	if first.SocketPath() != want {
		t.Fatalf("first inbox at %s, want %s", first.SocketPath(), want)
	}
	second := registerTestPeer(t, Config{RuntimeDir: run})
	runPeer(t, second)
	if filepath.Dir(second.SocketPath()) != filepath.Dir(want) ||
		!regexp.MustCompile(`^`+strconv.Itoa(os.Getpid())+`-[0-9a-f]{8}\.sock$`).MatchString(filepath.Base(second.SocketPath())) {
		t.Fatalf("second inbox at %s, want <pid>-<8 hex>.sock beside %s", second.SocketPath(), want)
	}
	if err := uds.Probe(context.Background(), first.SocketPath()); err != nil {
		t.Fatalf("the first inbox was taken over: %v", err)
	}
}

func TestListingSweepsOnlyRecordsProvenDead(t *testing.T) {
	ns, start := identity(t)
	boot, _, _ := strings.Cut(start, ":")
	p := registerTestPeer(t, Config{})
	dir := filepath.Dir(p.RecordPath())

	// A pid that has certainly exited.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := gone.Process.Pid
	// A live process whose start token we know.
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	liveStart, ok := ProcStartToken(live.Process.Pid)
	if !ok {
		t.Fatal("no start token for a child")
	}
	rec := func(pid int, procStart string, pidNS uint64) Record {
		return Record{PID: pid, ProcStart: procStart, PidNS: pidNS, SessionID: uuid.NewString(), Cwd: "/", Name: "x", StartedAt: 1, Kind: "tui"}
	}
	tests := []struct {
		name  string
		file  string
		rec   Record
		swept bool
	}{
		{"a record of an exited pid is swept", RecordFileName(deadPID, ""), rec(deadPID, boot+":1", ns), true},
		{"a record whose pid was reused by another process is swept", RecordFileName(live.Process.Pid, NewSuffix()), rec(live.Process.Pid, boot+":1", ns), true},
		{"a live process's record is kept", RecordFileName(live.Process.Pid, ""), rec(live.Process.Pid, liveStart, ns), false},
		{"a record of another pid namespace is kept", RecordFileName(deadPID, NewSuffix()), rec(deadPID, boot+":1", ns+1), false},
		{"a record of another boot is kept", RecordFileName(deadPID, NewSuffix()), rec(deadPID, "another-boot:1", ns), false},
		{"a record whose name and pid disagree is kept", RecordFileName(deadPID+100000, ""), rec(deadPID, boot+":1", ns), false},
	}
	for _, tt := range tests {
		b, err := tt.rec.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := safefile.WriteAtomic(filepath.Join(dir, tt.file), b); err != nil {
			t.Fatal(err)
		}
	}
	newer := filepath.Join(dir, RecordFileName(deadPID, NewSuffix()))
	if err := safefile.WriteAtomic(newer, []byte(`{"schemaVersion":2,"pid":`+strconv.Itoa(deadPID)+`}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sessions(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := os.Lstat(filepath.Join(dir, tt.file))
			if gone := os.IsNotExist(err); gone != tt.swept {
				t.Fatalf("swept = %v (%v), want %v", gone, err, tt.swept)
			}
		})
	}
	t.Run("a record of a newer schema is kept", func(t *testing.T) {
		if _, err := os.Lstat(newer); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("our own record is kept", func(t *testing.T) {
		if _, err := os.Lstat(p.RecordPath()); err != nil {
			t.Fatal(err)
		}
	})
}

// writeAndWait writes payload on one connection and returns once the inbox
// closed it, so the inbox is done with it.
func writeAndWait(t *testing.T, path string, payload []byte) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(payload); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.UnixConn).CloseWrite()
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the inbox did not close the connection: %v", err)
	}
}

func TestTheChildTokenMarksAProcessWeStarted(t *testing.T) {
	// Our review class is bypass and the frames assert prompting: a peer
	// is held for that, a child is delivered under the parity default.
	p := registerTestPeer(t, Config{Mode: message.ModeBypass})
	events, _ := runPeer(t, p)
	var sock, tok string
	for _, kv := range p.ChildEnv() {
		if v, ok := strings.CutPrefix(kv, EnvMessagingSocket+"="); ok {
			sock = v
		}
		if v, ok := strings.CutPrefix(kv, EnvMessagingToken+"="); ok {
			tok = v
		}
	}
	if sock != p.SocketPath() || !isHexToken(tok, 64) || Token(tok).Equal(readRecord(t, p.RecordPath()).IPCToken) {
		t.Fatalf("ChildEnv = %d entries; want our socket and a 64-hex token other than the record's", len(p.ChildEnv()))
	}
	frame := func(id string) UserFrame {
		return UserFrame{MsgID: id, FromName: "tool", FromMode: message.ModePrompting, ToSessionID: p.SessionID(), Content: "from " + id}
	}
	payload := func(token string, f UserFrame) []byte {
		b, err := Payload(Token(token), f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	wrong := uuid.NewString()
	writeAndWait(t, sock, payload(string(NewChildToken()), frame(wrong)))
	child := uuid.NewString()
	writeAndWait(t, sock, payload(tok, frame(child)))
	for ev := range within(t, events) {
		if ev.Type != message.EventMessage && ev.Type != message.EventHeld {
			continue
		}
		m := ev.Message
		if ev.Held != nil {
			m = &ev.Held.Message
		}
		if m.ID == wrong {
			t.Fatalf("a wrong token got a message in: %+v", ev)
		}
		if m.ID != child {
			continue
		}
		if ev.Type != message.EventMessage || m.Auth != message.AuthChild {
			t.Fatalf("the child's message came as %v with auth %q, want delivered as child", ev.Type, m.Auth)
		}
		break
	}
	t.Run("the same frame with our ipcToken is a peer's, and held", func(t *testing.T) {
		id := uuid.NewString()
		writeAndWait(t, sock, payload(string(readRecord(t, p.RecordPath()).IPCToken), frame(id)))
		for ev := range within(t, events) {
			if ev.Type == message.EventHeld && ev.Held.Message.ID == id {
				if ev.Held.Message.Auth != message.AuthPeer {
					t.Fatalf("auth %q", ev.Held.Message.Auth)
				}
				if r := ev.Held.Reason; !strings.Contains(r, " ") || !strings.HasSuffix(r, ")") {
					t.Fatalf("held for %q: want a sentence for the person deciding, ending in the cause", r)
				}
				return
			}
			if ev.Type == message.EventMessage && ev.Message.ID == id {
				t.Fatalf("a peer's mismatched message was delivered: %+v", ev.Message)
			}
		}
	})
}

// within yields events until the test has waited 10 s for one, then fails.
func within(t *testing.T, events <-chan message.Event) func(func(message.Event) bool) {
	return func(yield func(message.Event) bool) {
		for {
			select {
			case ev := <-events:
				if !yield(ev) {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatal("timed out waiting for an event")
				return
			}
		}
	}
}

func TestOurInboxLineHandlingFollowsTheSpec(t *testing.T) {
	t.Run("a line within 1 MiB of UTF-16 code units is read though it is over 1 MiB of bytes", func(t *testing.T) {
		p := registerTestPeer(t, Config{})
		events, _ := runPeer(t, p)
		body := strings.Repeat("é", 700_000) // 1.4 MB of UTF-8, 700 000 code units
		id := uuid.NewString()
		f := UserFrame{MsgID: id, FromMode: message.ModePrompting, ToSessionID: p.SessionID(), Content: body}
		b, err := Payload(readRecord(t, p.RecordPath()).IPCToken, f)
		if err != nil {
			t.Fatal(err)
		}
		writeAndWait(t, p.SocketPath(), b)
		for ev := range within(t, events) {
			if ev.Type == message.EventMessage && ev.Message.ID == id {
				if ev.Message.Body != body {
					t.Fatal("the body changed")
				}
				return
			}
		}
	})
	t.Run("junk lines after the auth line do not keep the connection open", func(t *testing.T) {
		const short = 150 * time.Millisecond
		p := registerTestPeer(t, Config{Socket: uds.Limits{FirstLineTimeout: short, LineTimeout: short}})
		runPeer(t, p)
		c, err := net.Dial("unix", p.SocketPath())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		auth, _ := Auth{Token: readRecord(t, p.RecordPath()).IPCToken}.Marshal()
		if _, err := c.Write(append(auth, '\n')); err != nil {
			t.Fatal(err)
		}
		// Junk every short/6 for 20×short: were each line to extend the
		// deadline, the inbox would wait for all of it.
		trickled := make(chan bool, 1)
		go func() {
			for range 120 {
				if _, err := c.Write([]byte("{\"not\":\"a frame\"}\n")); err != nil {
					trickled <- false
					return
				}
				time.Sleep(short / 6)
			}
			trickled <- true
		}()
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("the inbox wrote on the connection")
		}
		select {
		case done := <-trickled:
			if done {
				t.Fatal("the inbox read junk for the whole trickle")
			}
		default: // closed while junk was still coming
		}
	})
}

func TestASlowRouterDoesNotStallASendersConnection(t *testing.T) {
	// The router never reads: the first delivery waits for it forever.
	p := registerTestPeer(t, Config{Clock: clock.NewFakeClock(time.Time{})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, make(chan message.Event)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return: a connection is stuck")
		}
	})
	for p.Ready() != nil {
		time.Sleep(time.Millisecond)
	}
	s := newSink(t)
	tok := readRecord(t, p.RecordPath()).IPCToken
	lim := DefaultLimits()
	var last string
	for i := range lim.Sender.Burst + 1 {
		last = uuid.NewString()
		f := UserFrame{MsgID: last, From: s.path, ReplyToken: "r", FromMode: message.ModePrompting, ToSessionID: p.SessionID(), Content: "flood " + strconv.Itoa(i)}
		b, err := Payload(tok, f)
		if err != nil {
			t.Fatal(err)
		}
		// Each write returns only once the inbox closed the connection:
		// a handler stuck telling the router about a drop would not.
		writeAndWait(t, p.SocketPath(), b)
	}
	for range lim.Sender.Burst + 1 {
		lines, ok := s.next(t, 10*time.Second)
		if !ok {
			t.Fatal("not every message drew a receipt")
		}
		if st := lines[len(lines)-1].Status; st != nil && st.OrigMsgID == last {
			if st.Status != StatusDropped || st.DropReason != message.DropRateLimited {
				t.Fatalf("the last message drew %v (%v), want dropped rate-limited", st.Status, st.DropReason)
			}
			return
		}
	}
	t.Fatal("the dropped message drew no receipt")
}
