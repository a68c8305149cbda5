package qwencli

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/interop/internal/proc"
)

//go:embed testdata/peer.mjs
var peerScript []byte

// Delivery statuses a receipt carries, as Qwen Code and the SDK spell them.
// They are plain strings, not a closed type: the harness reports what the
// other program sent, including statuses newer than this list.
const (
	StatusHeld         = "held"
	StatusDelivered    = "delivered"
	StatusDenied       = "denied"
	StatusRefused      = "refused"
	StatusExpired      = "expired"
	StatusMisaddressed = "misaddressed"
	StatusDropped      = "dropped"
)

// Review classes a sender asserts with fromMode.
const (
	FromPrompting = "prompting"
	FromBypass    = "bypass"
)

const (
	endpointStartTimeout = 30 * time.Second
	endpointStopTimeout  = 10 * time.Second
	maxEndpointEvents    = 100_000 // messages and receipts kept each; later ones are counted, not stored
)

// ErrNoSDK says @qwen-code/sdk is not installed where the harness looks.
var ErrNoSDK = errors.New("@qwen-code/sdk not found (run .ci/install-interop.sh, or set GATEWAY_QWEN_NODE_MODULES)")

// NodeModules is the node_modules directory holding @qwen-code/sdk:
// $GATEWAY_QWEN_NODE_MODULES, else CacheDir()/node_modules.
func NodeModules() (string, error) {
	dir := os.Getenv("GATEWAY_QWEN_NODE_MODULES")
	if dir == "" {
		cache, err := CacheDir()
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrNoSDK, err)
		}
		dir = filepath.Join(cache, "node_modules")
	}
	if _, err := os.Stat(filepath.Join(dir, "@qwen-code", "sdk", "package.json")); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoSDK, err)
	}
	return dir, nil
}

// EndpointOptions says how to run one PeerEndpoint. Name and QwenHome are
// required.
type EndpointOptions struct {
	Name     string
	QwenHome string // QWEN_HOME: the registry it joins
	// XDGRuntimeDir is where its inbox binds (qwen-socks/<pid>.sock);
	// default a fresh short temp dir.
	XDGRuntimeDir string

	Kind            string // default "external"
	Cwd             string // recorded cwd; default the process's
	SessionID       string // default a fresh UUID
	SocketPath      string // bind here instead of choosing
	ControllerToken Token  // for sends marked Controller
	// Refuse leaves onMessage unset, so the SDK answers every message
	// "refused" and reports none.
	Refuse bool

	Node        string // default "node" on PATH
	NodeModules string // default NodeModules()
}

// Endpoint is one running PeerEndpoint (testdata/peer.mjs under node).
type Endpoint struct {
	info    endpointInfo
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stderr  *proc.TailBuffer
	tmpDir  string
	writeMu sync.Mutex // one writer on stdin at a time
	nextID  int        // command ids, under writeMu

	mu       sync.Mutex
	messages []InboundMessage
	receipts []Receipt
	results  map[int]endpointEvent // waiting to be taken by their command
	errs     []string              // onError reports
	dropped  int                   // messages and receipts past maxEndpointEvents
	changed  chan struct{}         // closed and replaced on every event and at exit

	done    chan struct{} // closed when node has exited
	waitErr error         // set before done closes

	closeOnce sync.Once
	closeErr  error
}

// endpointInfo is what peer.mjs prints once the endpoint is up.
type endpointInfo struct {
	SessionID   string `json:"sessionId"`
	Name        string `json:"name"`
	Ref         string `json:"ref"`
	Kind        string `json:"kind"`
	Cwd         string `json:"cwd"`
	PID         int    `json:"pid"`
	IPCPath     string `json:"ipcPath"`
	RecordPath  string `json:"recordPath"`
	RegistryDir string `json:"registryDir"`
}

// StartEndpoint starts a PeerEndpoint and returns once its record is
// written; t.Cleanup closes it. One that cannot start fails the test.
func StartEndpoint(t testing.TB, o EndpointOptions) *Endpoint {
	t.Helper()
	e, err := startEndpoint(o)
	if err != nil {
		t.Fatalf("qwencli: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("qwencli: closing endpoint %s: %v", e.Name(), err)
		}
		if t.Failed() {
			t.Logf("qwencli: endpoint %s stderr:\n%s", e.Name(), e.stderr.String())
		}
	})
	return e
}

// StartPeer starts a PeerEndpoint outside a test (the bench harness); the
// caller closes it.
func StartPeer(o EndpointOptions) (*Endpoint, error) { return startEndpoint(o) }

func startEndpoint(o EndpointOptions) (*Endpoint, error) {
	if o.Name == "" || o.QwenHome == "" {
		return nil, errors.New("EndpointOptions.Name and QwenHome are required")
	}
	if o.Node == "" {
		node, err := exec.LookPath("node")
		if err != nil {
			return nil, fmt.Errorf("an endpoint needs node: %w", err)
		}
		o.Node = node
	}
	if o.NodeModules == "" {
		dir, err := NodeModules()
		if err != nil {
			return nil, err
		}
		o.NodeModules = dir
	}
	tmp, err := os.MkdirTemp("", "qwp")
	if err != nil {
		return nil, err
	}
	if o.XDGRuntimeDir == "" {
		o.XDGRuntimeDir = filepath.Join(tmp, "rt")
	}
	if err := os.MkdirAll(o.XDGRuntimeDir, 0o700); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	script := filepath.Join(tmp, "peer.mjs")
	if err := os.WriteFile(script, peerScript, 0o600); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	args, err := json.Marshal(map[string]any{
		"name": o.Name, "kind": omit(o.Kind), "cwd": omit(o.Cwd), "sessionId": omit(o.SessionID),
		"socketPath": omit(o.SocketPath), "controllerToken": omit(string(o.ControllerToken)), "refuse": o.Refuse,
	})
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	cmd := exec.Command(o.Node, script, string(args))
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + tmp,
		"QWEN_HOME=" + o.QwenHome,
		"XDG_RUNTIME_DIR=" + o.XDGRuntimeDir,
		"TMPDIR=" + tmp,
		"NODE_PATH=" + o.NodeModules,
	}
	e := &Endpoint{
		cmd:     cmd,
		stderr:  &proc.TailBuffer{Max: 64 << 10},
		tmpDir:  tmp,
		results: map[int]endpointEvent{},
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	cmd.Stderr = e.stderr
	if e.stdin, err = cmd.StdinPipe(); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("starting node: %w", err)
	}
	started := make(chan endpointEvent, 1)
	// The one goroutine an endpoint owns: it reads stdout to EOF, reaps
	// node, and closes done. Close waits for it.
	go func() {
		e.read(stdout, started)
		err := cmd.Wait()
		e.mu.Lock()
		e.waitErr = err
		e.wake()
		e.mu.Unlock()
		close(e.done)
	}()
	select {
	case ev := <-started:
		if ev.Event == "error" {
			<-e.done
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("PeerEndpoint.start: %s (%s)", ev.Error, ev.Code)
		}
		if err := json.Unmarshal(ev.Raw, &e.info); err != nil {
			e.Close()
			return nil, fmt.Errorf("started event %s: %w", ev.Raw, err)
		}
		return e, nil
	case <-e.done:
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("node exited before the endpoint started (%v):\n%s", e.waitErr, e.stderr.String())
	case <-time.After(endpointStartTimeout):
		e.Close()
		return nil, fmt.Errorf("the endpoint did not start within %v:\n%s", endpointStartTimeout, e.stderr.String())
	}
}

// omit turns "" into nil, so JSON leaves the option to the SDK's default.
func omit(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// read files every event until stdout ends. The first "started" or "error"
// line goes to started.
func (e *Endpoint) read(r io.Reader, started chan<- endpointEvent) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	first := true
	for sc.Scan() {
		ev, err := parseEvent(sc.Bytes())
		if err != nil {
			fmt.Fprintf(e.stderr, "qwencli: unreadable line from peer.mjs: %q\n", sc.Bytes())
			continue
		}
		if first && (ev.Event == "started" || ev.Event == "error") {
			first = false
			started <- ev
			continue
		}
		e.add(ev)
	}
	io.Copy(io.Discard, r)
}

func (e *Endpoint) add(ev endpointEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.wake()
	// Keep the oldest when full: tests wait on what happened first.
	full := len(e.messages)+len(e.receipts) >= maxEndpointEvents
	switch ev.Event {
	case "message":
		var m InboundMessage
		switch {
		case json.Unmarshal(ev.Raw, &m) != nil:
		case full:
			e.dropped++
		default:
			e.messages = append(e.messages, m)
		}
	case "receipt":
		var r Receipt
		switch {
		case json.Unmarshal(ev.Raw, &r) != nil:
		case full:
			e.dropped++
		default:
			e.receipts = append(e.receipts, r)
		}
	case "result":
		e.results[ev.ID] = ev // taken at once by the one command waiting for it
	case "error":
		if len(e.errs) < 1000 {
			e.errs = append(e.errs, ev.Error)
		}
	}
}

// wake tells waiters something changed; e.mu is held.
func (e *Endpoint) wake() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// command sends one command and waits for its result.
func (e *Endpoint) command(ctx context.Context, cmd map[string]any) (json.RawMessage, error) {
	e.writeMu.Lock()
	e.nextID++
	id := e.nextID
	cmd["id"] = id
	b, err := json.Marshal(cmd)
	if err == nil {
		_, err = e.stdin.Write(append(b, '\n'))
	}
	e.writeMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("qwencli: writing to peer.mjs: %w", err)
	}
	for {
		e.mu.Lock()
		ev, ok := e.results[id]
		delete(e.results, id)
		changed := e.changed
		e.mu.Unlock()
		if ok {
			if ev.Error != "" {
				return nil, fmt.Errorf("qwencli: %s: %s (%s)", cmd["cmd"], ev.Error, ev.Code)
			}
			return ev.Result, nil
		}
		select {
		case <-changed:
		case <-e.done:
			return nil, fmt.Errorf("qwencli: peer.mjs exited (%v) before answering %s", e.waitErr, cmd["cmd"])
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Send sends a message with PeerEndpoint.send. An error means the command
// failed; a send the SDK could not make is a SendResult whose Kind says why.
func (e *Endpoint) Send(ctx context.Context, o SendOptions) (SendResult, error) {
	cmd := map[string]any{"cmd": "send", "to": o.To, "content": o.Content}
	if o.FromMode != "" {
		cmd["fromMode"] = o.FromMode
	}
	if o.Priority != "" {
		cmd["priority"] = o.Priority
	}
	if o.Controller {
		cmd["controller"] = true
	}
	raw, err := e.command(ctx, cmd)
	if err != nil {
		return SendResult{}, err
	}
	var r SendResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return SendResult{}, fmt.Errorf("qwencli: send result %s: %w", raw, err)
	}
	return r, nil
}

// List is PeerEndpoint.list: the sessions it can send to now.
func (e *Endpoint) List(ctx context.Context) ([]PeerSession, error) {
	raw, err := e.command(ctx, map[string]any{"cmd": "list"})
	if err != nil {
		return nil, err
	}
	var out []PeerSession
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("qwencli: list result %s: %w", raw, err)
	}
	return out, nil
}

// WaitMessage waits for a message matching pred (nil matches any), looking
// at those already received first.
func (e *Endpoint) WaitMessage(ctx context.Context, pred func(InboundMessage) bool) (InboundMessage, error) {
	seen := 0
	for {
		e.mu.Lock()
		msgs, changed := e.messages[seen:], e.changed
		e.mu.Unlock()
		for _, m := range msgs {
			if pred == nil || pred(m) {
				return m, nil
			}
		}
		seen += len(msgs)
		if err := e.waitChange(ctx, changed); err != nil {
			return InboundMessage{}, fmt.Errorf("qwencli: no matching message after %d: %w", seen, err)
		}
	}
}

// WaitReceipt waits for a receipt for msgID with this status ("" for any).
func (e *Endpoint) WaitReceipt(ctx context.Context, msgID, status string) (Receipt, error) {
	seen := 0
	for {
		e.mu.Lock()
		rs, changed := e.receipts[seen:], e.changed
		e.mu.Unlock()
		for _, r := range rs {
			if r.MsgID == msgID && (status == "" || r.Status == status) {
				return r, nil
			}
		}
		seen += len(rs)
		if err := e.waitChange(ctx, changed); err != nil {
			return Receipt{}, fmt.Errorf("qwencli: no %q receipt for %s after %d receipts: %w", status, msgID, seen, err)
		}
	}
}

func (e *Endpoint) waitChange(ctx context.Context, changed <-chan struct{}) error {
	select {
	case <-changed:
		return nil
	case <-e.done:
		// One more look happens on the next pass; after that, nothing new.
		select {
		case <-changed:
			return nil
		default:
			return fmt.Errorf("peer.mjs exited (%v)", e.waitErr)
		}
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// SessionID is the endpoint's session id.
func (e *Endpoint) SessionID() string { return e.info.SessionID }

// Name is the endpoint's name as the SDK recorded it.
func (e *Endpoint) Name() string { return e.info.Name }

// Ref is the short handle sessions show after the name.
func (e *Endpoint) Ref() string { return e.info.Ref }

// PID is the node process, the pid in the record.
func (e *Endpoint) PID() int { return e.info.PID }

// IPCPath is the endpoint's inbox socket.
func (e *Endpoint) IPCPath() string { return e.info.IPCPath }

// RecordPath is the record file the endpoint published.
func (e *Endpoint) RecordPath() string { return e.info.RecordPath }

// Record reads the endpoint's record, which holds its ipcToken.
func (e *Endpoint) Record() (Record, error) { return ReadRecord(e.info.RecordPath) }

// Close closes the endpoint (which removes its record and socket) and waits
// for node to exit, killing it after 10 s. It is safe to call more than once.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() { e.closeErr = e.close() })
	return e.closeErr
}

func (e *Endpoint) close() error {
	defer os.RemoveAll(e.tmpDir)
	select {
	case <-e.done:
		return fmt.Errorf("peer.mjs exited before Close: %v", e.waitErr)
	default:
	}
	e.writeMu.Lock()
	e.stdin.Write([]byte(`{"cmd":"close"}` + "\n"))
	e.stdin.Close()
	e.writeMu.Unlock()
	select {
	case <-e.done:
	case <-time.After(endpointStopTimeout):
		e.cmd.Process.Kill()
		<-e.done
		return fmt.Errorf("peer.mjs still running %v after close; killed", endpointStopTimeout)
	}
	return e.waitErr
}
