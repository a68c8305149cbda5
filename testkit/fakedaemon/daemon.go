package fakedaemon

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

const (
	// Proto is the one control-protocol version 2.1.332 speaks (the code's
	// accepted range is [1, 1]).
	Proto = 1
	// Version is what ping and EPROTO report as the daemon's release.
	Version = "2.1.332"
	// MaxRequest is the longest request line the daemon reads (1 MiB).
	MaxRequest = 1 << 20

	defaultTail = 200 // subscribe's tail when the request names none
	keepTail    = 500 // stream lines kept per job for snapshots
	subQueue    = 256 // frames queued per subscriber before it is cut off
)

// Record is a job as list and a snapshot show it: the fields seen on the
// real daemon. It sends more (see FINDINGS-bg.md); clients must ignore
// what they do not know.
type Record struct {
	Short      string `json:"short"`
	Nonce      string `json:"nonce,omitempty"`
	SessionID  string `json:"sessionId"`
	PID        int    `json:"pid"`
	Attempt    int    `json:"attempt"`
	StartedAt  int64  `json:"startedAt"`
	CreatedAt  int64  `json:"createdAt"`
	Cwd        string `json:"cwd"`
	Backend    string `json:"backend"`
	Tempo      string `json:"tempo,omitempty"`
	State      string `json:"state"`
	Detail     string `json:"detail"`
	Intent     string `json:"intent"`
	Name       string `json:"name,omitempty"`
	CLIVersion string `json:"cliVersion"`
	Source     string `json:"source"`
	Needs      string `json:"needs,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
	SettledAt  int64  `json:"settledAt,omitempty"`
}

// Reply is one accepted reply request.
type Reply struct {
	Short, Text string
	NextTurn    bool
}

// Daemon is a running stand-in. Its methods are safe for concurrent use.
type Daemon struct {
	path  string
	key   string
	proto int
	ln    net.Listener

	mu         sync.Mutex
	jobs       map[string]*job
	order      []string // shorts in creation order, as list shows them
	replies    []Reply
	dispatches []json.RawMessage
	nextPID    int
	conns      map[net.Conn]struct{}
	closed     bool
	closeOnce  sync.Once
	wg         sync.WaitGroup
}

type job struct {
	rec  Record
	tail []string
	subs map[*subscriber]struct{}
}

// subscriber is one subscribe connection. Frames go through a bounded queue
// so a slow reader never blocks the daemon; a full queue cuts it off, as
// the real daemon destroys a subscriber more than 1 MiB behind.
type subscriber struct {
	frames chan []byte
}

// Options says where the stand-in listens.
type Options struct {
	// ConfigDir, when set, makes the stand-in sit where the real daemon of
	// that config dir would: it listens on SocketPath(ConfigDir) and writes
	// its key to ConfigDir/daemon/control.key. Otherwise it listens in a
	// fresh directory under the system temp dir.
	ConfigDir string
	// Proto is the control-protocol version the stand-in speaks; 0 is
	// Proto. Another one makes it a daemon the gateway does not speak to:
	// ping reports it, and every request in version 1 is EPROTO.
	Proto int
}

// Start runs a stand-in for the test and stops it at cleanup.
func Start(t testing.TB, o Options) *Daemon {
	t.Helper()
	d, err := Listen(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// Listen starts a stand-in.
func Listen(o Options) (*Daemon, error) {
	key, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	var path string
	if o.ConfigDir != "" {
		if path, err = SocketPath(o.ConfigDir); err != nil {
			return nil, err
		}
		if err := writeKey(o.ConfigDir, key); err != nil {
			return nil, err
		}
	} else {
		// The temp dir, not t.TempDir: a socket path must stay under ~108 bytes.
		dir, err := os.MkdirTemp("", "fakedaemon")
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, "control.sock")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	_ = os.Remove(path) // a stale socket from an earlier run
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	proto := o.Proto
	if proto == 0 {
		proto = Proto
	}
	d := &Daemon{path: path, key: key, proto: proto, ln: ln, jobs: map[string]*job{}, nextPID: 40000, conns: map[net.Conn]struct{}{}}
	d.wg.Add(1)
	go d.accept()
	return d, nil
}

// SocketPath is the real daemon's control socket for a config dir:
// /tmp/cc-daemon-<uid>/<first 8 hex of sha256(absolute config dir)>/control.sock.
// (The CLI also NFC-normalises the dir; paths here are taken as given.)
func SocketPath(configDir string) (string, error) {
	abs, err := filepath.Abs(configDir)
	if err != nil {
		return "", err
	}
	return filepath.Join("/tmp", fmt.Sprintf("cc-daemon-%d", os.Getuid()), dirHash(abs), "control.sock"), nil
}

func writeKey(configDir, key string) error {
	dir := filepath.Join(configDir, "daemon")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "control.key"), []byte(key), 0o600)
}

// SocketPath is where the stand-in listens.
func (d *Daemon) SocketPath() string { return d.path }

// Key is the control key: 32 hex characters, presented as "auth".
func (d *Daemon) Key() string { return d.key }

// Close stops the stand-in, ends every connection and waits for them.
func (d *Daemon) Close() {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.closed = true
		for c := range d.conns {
			c.Close()
		}
		for _, j := range d.jobs {
			for s := range j.subs {
				close(s.frames)
			}
			j.subs = map[*subscriber]struct{}{}
		}
		d.mu.Unlock()
		d.ln.Close()
	})
	d.wg.Wait()
}

// AddJob adds a live job, filling what r leaves empty, and returns it.
func (d *Daemon) AddJob(r Record) Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.addLocked(r)
}

func (d *Daemon) addLocked(r Record) Record {
	now := time.Now().UnixMilli()
	if r.Short == "" {
		r.Short, _ = randomHex(4)
	}
	if r.SessionID == "" {
		r.SessionID = r.Short + "-0000-4000-8000-000000000000"
	}
	if r.PID == 0 {
		d.nextPID++
		r.PID = d.nextPID
	}
	if r.Attempt == 0 {
		r.Attempt = 1
	}
	if r.CreatedAt == 0 {
		r.CreatedAt = now
	}
	if r.StartedAt == 0 {
		r.StartedAt = now
	}
	fill := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	fill(&r.Backend, "daemon")
	fill(&r.State, "working")
	fill(&r.Tempo, "idle")
	fill(&r.CLIVersion, Version)
	fill(&r.Source, "shell")
	d.jobs[r.Short] = &job{rec: r, subs: map[*subscriber]struct{}{}}
	d.order = append(d.order, r.Short)
	return r
}

// Jobs is what list would answer now.
func (d *Daemon) Jobs() []Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Record, 0, len(d.order))
	for _, s := range d.order {
		out = append(out, d.jobs[s].rec)
	}
	return out
}

// Replies are the reply requests accepted so far.
func (d *Daemon) Replies() []Reply {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Reply(nil), d.replies...)
}

// Dispatches are the "d" objects of the dispatch requests accepted so far.
func (d *Daemon) Dispatches() []json.RawMessage {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]json.RawMessage(nil), d.dispatches...)
}

// ErrNoJob says a job is not live.
var ErrNoJob = errors.New("fakedaemon: no such live job")

// Stream sends line (terminal output, as the real daemon relays it) to the
// job's subscribers and keeps it for later snapshots.
func (d *Daemon) Stream(short, line string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[short]
	if j == nil || j.rec.Outcome != "" {
		return ErrNoJob
	}
	if j.tail = append(j.tail, line); len(j.tail) > keepTail {
		j.tail = j.tail[len(j.tail)-keepTail:]
	}
	d.sendLocked(j, map[string]any{"type": "stream", "line": line})
	return nil
}

// Patch changes the job's record and sends the change as a state frame.
func (d *Daemon) Patch(short string, patch map[string]any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[short]
	if j == nil || j.rec.Outcome != "" {
		return ErrNoJob
	}
	return d.patchLocked(j, patch)
}

func (d *Daemon) patchLocked(j *job, patch map[string]any) error {
	merged, err := applyPatch(j.rec, patch)
	if err != nil {
		return err
	}
	j.rec = merged
	d.sendLocked(j, map[string]any{"type": "state", "patch": patch})
	return nil
}

// Settle ends the job with outcome ("done", "failed", "killed"): a state
// patch, then a settled frame, then its subscribers are disconnected. A
// killed job leaves list (seen); another stays with its outcome (read).
func (d *Daemon) Settle(short, outcome string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	j := d.jobs[short]
	if j == nil || j.rec.Outcome != "" {
		return ErrNoJob
	}
	return d.settleLocked(j, outcome)
}

func (d *Daemon) settleLocked(j *job, outcome string) error {
	patch := map[string]any{"outcome": outcome, "settledAt": time.Now().UnixMilli(), "tempo": "idle"}
	if err := d.patchLocked(j, patch); err != nil {
		return err
	}
	d.sendLocked(j, map[string]any{"type": "settled", "outcome": outcome})
	for s := range j.subs {
		close(s.frames)
	}
	j.subs = map[*subscriber]struct{}{}
	if outcome == "killed" {
		d.removeLocked(j.rec.Short)
	}
	return nil
}

func (d *Daemon) removeLocked(short string) {
	delete(d.jobs, short)
	for i, s := range d.order {
		if s == short {
			d.order = append(d.order[:i], d.order[i+1:]...)
			break
		}
	}
}

func (d *Daemon) sendLocked(j *job, frame map[string]any) {
	b, _ := json.Marshal(frame)
	for s := range j.subs {
		select {
		case s.frames <- b:
		default: // too far behind: cut off
			close(s.frames)
			delete(j.subs, s)
		}
	}
}

func (d *Daemon) accept() {
	defer d.wg.Done()
	for {
		c, err := d.ln.Accept()
		if err != nil {
			return
		}
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			c.Close()
			return
		}
		d.conns[c] = struct{}{}
		d.wg.Add(1)
		d.mu.Unlock()
		go func() {
			defer d.wg.Done()
			defer func() {
				d.mu.Lock()
				delete(d.conns, c)
				d.mu.Unlock()
				c.Close()
			}()
			d.serve(c)
		}()
	}
}

// serve reads one request line and answers it; anything after the first
// newline is ignored, as on the real daemon.
func (d *Daemon) serve(c net.Conn) {
	line, err := readLine(c)
	if errors.Is(err, errTooLarge) {
		writeFrame(c, fail("ETOOLARGE", "request exceeds 1MB \u2014 shorten the prompt or send in parts"))
		return
	}
	if err != nil {
		return
	}
	answer, sub := d.handle(line)
	if answer != nil {
		writeFrame(c, answer)
		if answer["op"] == "shutdown" {
			go d.Close() // not inline: Close waits for this goroutine
		}
	}
	if sub == nil {
		return
	}
	// The reader notices a client that hangs up; the loop ends when the
	// job settles, the subscriber is cut off or hangs up, or the daemon closes.
	go func() {
		buf := make([]byte, 512)
		for {
			if _, err := c.Read(buf); err != nil {
				d.unsubscribe(sub)
				return
			}
		}
	}()
	for b := range sub.frames {
		if _, err := c.Write(append(b, '\n')); err != nil {
			d.unsubscribe(sub)
			return
		}
	}
}

func (d *Daemon) unsubscribe(s *subscriber) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.jobs {
		if _, ok := j.subs[s]; ok {
			delete(j.subs, s)
			close(s.frames)
		}
	}
}

var errTooLarge = errors.New("request too large")

// readLine reads up to the first newline. Like the real daemon it gives up
// only when more than MaxRequest bytes have come without one.
func readLine(c net.Conn) ([]byte, error) {
	var line []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := c.Read(chunk)
		if i := bytes.IndexByte(chunk[:n], '\n'); i >= 0 {
			return append(line, chunk[:i]...), nil
		}
		if line = append(line, chunk[:n]...); len(line) > MaxRequest {
			return nil, errTooLarge
		}
		if err != nil {
			return nil, err
		}
	}
}

func writeFrame(c net.Conn, v any) {
	b, _ := json.Marshal(v)
	_, _ = c.Write(append(b, '\n'))
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// applyPatch merges patch into r as the JSON objects they are.
func applyPatch(r Record, patch map[string]any) (Record, error) {
	b, _ := json.Marshal(r)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for k, v := range patch {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return r, err
	}
	var out Record
	if err := json.Unmarshal(b, &out); err != nil {
		return r, fmt.Errorf("fakedaemon: patch does not fit a record: %w", err)
	}
	return out, nil
}
