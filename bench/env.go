package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Env is what a suite gets: the run's settings and a place to start
// gateways and sinks that are stopped when the suite ends.
type Env struct {
	Short      bool   // -short: a few messages each, for CI
	Bin        string // the gateway binary
	ProfileDir string // -profile: where Profile writes; "" profiles nothing

	suite   string
	cleanup []func()
}

// N is full, or short under -short.
func (e *Env) N(full, short int) int {
	if e.Short {
		return short
	}
	return full
}

// Cleanup runs f when the suite ends, the last added first.
func (e *Env) Cleanup(f func()) { e.cleanup = append(e.cleanup, f) }

func (e *Env) close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
	e.cleanup = nil
}

// World is one scratch machine for a gateway and the sessions it reaches:
// every directory they share, under one short root (socket paths stay
// under the kernel's ~104-byte limit).
type World struct {
	Root      string   // HOME and TMPDIR
	ConfigDir string   // CLAUDE_CONFIG_DIR
	Runtime   string   // XDG_RUNTIME_DIR
	StateDir  string   // GATEWAY_STATE_DIR
	QwenHome  string   // QWEN_HOME
	Extra     []string // more environment, KEY=VALUE, applied last
}

// NewWorld makes a World, removed when the suite ends.
func (e *Env) NewWorld() (*World, error) {
	root, err := os.MkdirTemp("", "gwb")
	if err != nil {
		return nil, err
	}
	e.Cleanup(func() { os.RemoveAll(root) })
	w := &World{Root: root, ConfigDir: filepath.Join(root, "claude"), Runtime: filepath.Join(root, "run"),
		StateDir: filepath.Join(root, "state"), QwenHome: filepath.Join(root, "qwen")}
	for _, d := range []string{w.ConfigDir, w.Runtime, w.QwenHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Env is the environment of a process in the World: this one's, less
// anything that configures a gateway, with the World's directories.
func (w *World) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GATEWAY_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	env = append(env, "CLAUDE_CONFIG_DIR="+w.ConfigDir, "XDG_RUNTIME_DIR="+w.Runtime,
		"GATEWAY_STATE_DIR="+w.StateDir, "QWEN_HOME="+w.QwenHome, "HOME="+w.Root, "TMPDIR="+w.Root)
	return append(env, w.Extra...)
}

// Gateway is a running gateway binary with a client on its control socket.
type Gateway struct {
	cmd       *exec.Cmd
	debugAddr string // the pprof server's address under -profile
	logs      *capped
	exited    chan struct{}
	http      *http.Client
	api       *apiPool // the control socket's connections for Send
}

// StartGateway runs `gateway serve --name bench args...` in w and waits
// until its control API answers. It is stopped when the suite ends.
func (e *Env) StartGateway(ctx context.Context, w *World, args ...string) (*Gateway, error) {
	g := &Gateway{logs: &capped{max: 1 << 20}, exited: make(chan struct{})}
	if e.ProfileDir != "" {
		a, err := freeLoopback()
		if err != nil {
			return nil, err
		}
		g.debugAddr = a
		args = append(args, "--debug-addr", a)
	}
	cmd := exec.Command(e.Bin, append([]string{"serve", "--name", "bench"}, args...)...)
	cmd.Env = w.Env()
	g.cmd = cmd
	cmd.Stderr = g.logs
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait(); close(g.exited) }()
	e.Cleanup(g.stop)
	sock := filepath.Join(w.StateDir, "gateway.sock")
	g.api = newAPIPool(sock)
	g.http = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := g.do(ctx, "GET", "/v1/sessions", nil, nil)
		if err == nil {
			return g, nil
		}
		select {
		case <-g.exited:
			return nil, fmt.Errorf("the gateway exited: %s", g.logs)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the gateway is not answering: %v\n%s", err, g.logs)
		}
	}
}

// maxSenders is the most concurrent senders a suite uses.
const maxSenders = 64

func (g *Gateway) stop() {
	g.api.close()
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(15 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
}

// PID is the gateway's process id.
func (g *Gateway) PID() int { return g.cmd.Process.Pid }

// sendBody is POST /v1/messages's body, as much of it as the bench uses.
type sendBody struct {
	To       string `json:"to"`
	Text     string `json:"text"`
	Unpaced  bool   `json:"unpaced,omitempty"`
	FromName string `json:"from_name,omitempty"`
}

// Send posts one message and returns once the API has answered; an answer
// other than sent or delivered is an error.
func (g *Gateway) Send(ctx context.Context, to, text string, unpaced bool) error {
	return g.post(ctx, sendBody{To: to, Text: text, Unpaced: unpaced})
}

// SendAs posts one message from the sender named from, as Send.
func (g *Gateway) SendAs(ctx context.Context, from, to, text string) error {
	return g.post(ctx, sendBody{To: to, Text: text, FromName: from})
}

func (g *Gateway) post(ctx context.Context, b sendBody) error {
	var out struct {
		Status string `json:"status"`
	}
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	st, raw, err := g.api.do(ctx, "POST", "/v1/messages", body)
	switch {
	case err != nil:
		return err
	case st/100 != 2:
		return fmt.Errorf("POST /v1/messages: %d: %s", st, bytes.TrimSpace(raw))
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return err
	}
	if out.Status != "sent" && out.Status != "delivered" {
		return fmt.Errorf("the gateway answered %q", out.Status)
	}
	return nil
}

// Sessions lists the names the gateway reaches, with their protocols.
func (g *Gateway) Sessions(ctx context.Context) (map[string]string, error) {
	var ss []struct{ Name, Protocol string }
	if err := g.do(ctx, "GET", "/v1/sessions", nil, &ss); err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, s := range ss {
		m[s.Name] = s.Protocol
	}
	return m, nil
}

// WaitListed waits until the gateway lists name.
func (g *Gateway) WaitListed(ctx context.Context, name string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ss, err := g.Sessions(ctx)
		if err != nil {
			return err
		}
		if _, ok := ss[name]; ok {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the gateway does not list %q", name)
}

func (g *Gateway) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://gateway"+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(raw))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

// build compiles the gateway into dir.
func build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "gateway")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/sessiongateway/gateway/cmd/gateway").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building the gateway: %v\n%s", err, out)
	}
	return bin, nil
}

// CPU is the processor time the gateway process has used so far.
func (g *Gateway) CPU() time.Duration { return procCPU(g.PID()) }

// procCPU is the processor time process pid has used so far (user and
// system), from /proc/<pid>/stat; 0 where that cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces): state is the
	// 3rd field, utime the 14th and stime the 15th.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+s) * time.Second / userHZ
}

// userHZ is USER_HZ: what /proc reports CPU times in on Linux.
const userHZ = 100
