package claude

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/message"
)

// rig is one registered Leg, served until the test ends, in directories of
// its own: its events, its log lines, and where its peers' sockets go.
type rig struct {
	p      *Leg
	events chan message.Event
	logs   *logLines
	socks  string // the cc-socks directory next to the peer's own socket
	stop   func() // ends Run and waits for it; safe to call twice
}

// startRig registers a peer with cfg (dirs filled in) and serves it; events
// stay in a large buffer the test reads with next.
func startRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	if cfg.RuntimeDir == "" {
		cfg.RuntimeDir = testutil.ShortTempDir(t)
	}
	if cfg.ConfigDir == "" {
		cfg.ConfigDir = t.TempDir()
	}
	logs := &logLines{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := Register(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{p: p, events: make(chan message.Event, 512), logs: logs, socks: filepath.Dir(p.SocketPath())}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Run(ctx, r.events)
	}()
	var once sync.Once
	r.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(r.stop)
	if !testutil.Within(testutil.Patience, func() bool { return p.Ready() == nil }) {
		t.Fatal("peer never became ready")
	}
	return r
}

// next returns the next event matching pred, skipping others.
func (r *rig) next(t *testing.T, pred func(message.Event) bool) message.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-r.events:
			if pred(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("timed out waiting for an event")
		}
	}
}

func isType(tp message.EventType) func(message.Event) bool {
	return func(ev message.Event) bool { return ev.Type == tp }
}

// logLines is a concurrency-safe log sink.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.buf.String(), s)
}

// sock is a socket of the test process standing in for another session: it
// binds a reply-shaped path and records every line it is sent. Connections
// are read one at a time, in the order they were made, so a sentinel
// connection proves every earlier one has been read.
type sock struct {
	path string
	addr string
	ln   net.Listener

	mu    sync.Mutex
	conns [][]string // lines, per connection
	seen  chan struct{}
	done  chan struct{}
}

var sockSeq atomic.Int64

func listenSock(t *testing.T, dir string) *sock {
	t.Helper()
	name := strconv.FormatInt(900000+sockSeq.Add(1), 10) + ".sock"
	path := filepath.Join(dir, name)
	if err := safefile.EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := &sock{path: path, addr: addressing.UDS(path), ln: ln, seen: make(chan struct{}, 1024), done: make(chan struct{})}
	go s.serve()
	t.Cleanup(s.close)
	return s
}

func (s *sock) serve() {
	defer close(s.done)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		var lines []string
		sc := bufio.NewScanner(c)
		sc.Buffer(make([]byte, 64<<10), 2<<20)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		c.Close()
		s.mu.Lock()
		s.conns = append(s.conns, lines)
		s.mu.Unlock()
		s.seen <- struct{}{}
	}
}

func (s *sock) close() {
	s.ln.Close()
	<-s.done
}

// settle makes one empty connection of its own and waits until it has been
// read: every connection made before it has been read too.
func (s *sock) settle(t *testing.T) {
	t.Helper()
	c, err := net.Dial("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	testutil.Eventually(t, "the socket took the empty connection", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.conns) > 0 && len(s.conns[len(s.conns)-1]) == 0
	})
}

// frames returns every frame line received, auth lines left out, parsed.
func (s *sock) frames(t *testing.T) []Frame {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Frame
	for _, c := range s.conns {
		for _, l := range c {
			pl, err := ParseLine([]byte(l))
			if err != nil {
				t.Fatalf("bad line %q: %v", l, err)
			}
			if pl.Frame != nil {
				out = append(out, *pl.Frame)
			}
		}
	}
	return out
}

// lines returns the raw lines of every connection.
func (s *sock) lines() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.conns...)
}

// waitFrame waits for a received frame matching pred.
func (s *sock) waitFrame(t *testing.T, pred func(Frame) bool) Frame {
	t.Helper()
	var got Frame
	if !testutil.Within(testutil.Patience, func() bool {
		for _, f := range s.frames(t) {
			if pred(f) {
				got = f
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no matching frame; got %+v", s.frames(t))
	}
	return got
}

// userFrame is a message from s with the given mode and body.
func (s *sock) userFrame(t *testing.T, mode, body string) (string, []byte) {
	t.Helper()
	id := uuid.NewString()
	f := NewUserFrame(s.addr, id, Envelope{From: s.addr, FromName: "tester", FromMode: mode, Body: body}, nil)
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return id, b
}

// dial writes lines to the socket at path on one connection.
func dial(t *testing.T, path string, lines ...[]byte) {
	t.Helper()
	var buf []byte
	for _, l := range lines {
		buf = append(append(buf, l...), '\n')
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := uds.DialWrite(ctx, path, buf); err != nil {
		t.Fatal(err)
	}
}

func authLine(t *testing.T, token string) []byte {
	t.Helper()
	b, err := Auth{Type: TypeAuth, Token: token}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func marshal(t *testing.T, f Frame) []byte {
	t.Helper()
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeKey gives the socket s a key file in the rig's sessions directory,
// as a registered session of this very process.
func (r *rig) writeKey(t *testing.T, s *sock, token, procStart string) {
	t.Helper()
	if procStart == "" {
		ticks, err := uds.StartTicks(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		procStart = strconv.FormatUint(ticks, 10)
	}
	b, err := json.Marshal(KeyFile{PeerToken: token, ProcStart: procStart, PidDomain: r.p.pidDomain})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.p.sessionsDir, KeyFileName(os.Getpid(), s.path)), b, 0o600); err != nil {
		t.Fatal(err)
	}
}
