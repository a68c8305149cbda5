package abuse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/claude"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// planted is a socket of this test process that a planted record names as
// another process's: it counts what the gateway sends it.
type planted struct {
	path  string
	mu    sync.Mutex
	conns int
	got   bytes.Buffer
}

func plantSocket(t *testing.T, dir string) *planted {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := &planted{path: filepath.Join(dir, "1.sock")}
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			b, _ := io.ReadAll(io.LimitReader(c, 1<<20))
			c.Close()
			p.mu.Lock()
			p.conns++
			p.got.Write(b)
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return p
}

func (p *planted) read() (conns int, b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns, bytes.Clone(p.got.Bytes())
}

// bystander is a live process of ours that listens on nothing: the pid a
// planted record claims.
func bystander(t *testing.T) int {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	return c.Process.Pid
}

// A record naming a live process of ours and a socket that process does
// not listen on (another process's, here this test's) gets nothing from
// the gateway: no message, no auth line, and never the gateway's own
// replyToken; and `gateway sessions` does not show it reachable.
func TestAPlantedRecordGetsNothing(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gw")
	qsessions := qwen.SessionsDir(w.QwenHome)
	ours, err := os.ReadFile(filepath.Join(qsessions, qwen.RecordFileName(g.PID, "")))
	if err != nil {
		t.Fatalf("the gateway's qwen record: %v", err)
	}
	rec, err := qwen.ParseRecord(ours)
	if err != nil {
		t.Fatal(err)
	}
	replyToken := []byte(rec.IPCToken)

	// A Qwen record for a bystander, its inbox a socket of ours.
	qsock := plantSocket(t, filepath.Join(w.Root, "qwen-socks-planted"))
	qpid := bystander(t)
	start, ok := qwen.ProcStartToken(qpid)
	ns, err := uds.PidNamespace(qpid)
	if !ok || err != nil {
		if runtime.GOOS != "linux" {
			t.Skip("no process identity off Linux")
		}
		t.Fatalf("no process identity for pid %d on Linux: start %q %v, %v", qpid, start, ok, err)
	}
	qrec := qwen.Record{PID: qpid, ProcStart: start, PidNS: ns, SessionID: uuid.NewString(), Cwd: "/",
		Name: "planted-qwen", StartedAt: time.Now().UnixMilli(), Kind: qwen.KindTUI, IPCPath: qsock.path, IPCToken: qwen.NewIPCToken()}
	b, err := qrec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := safefile.WriteAtomic(filepath.Join(qsessions, qwen.RecordFileName(qpid, "")), b); err != nil {
		t.Fatal(err)
	}

	// A Claude Code registry entry and key file for another bystander.
	csock := plantSocket(t, filepath.Join(w.Root, "cs"))
	cpid := bystander(t)
	id, err := uds.Identify(cpid)
	if err != nil {
		if runtime.GOOS != "linux" {
			t.Skip("no process identity off Linux")
		}
		t.Fatalf("no process identity for pid %d on Linux: %v", cpid, err)
	}
	domain := fmt.Sprintf("linux:%s:pid:[%d]", id.MachineID, id.PidNS)
	procStart := strconv.FormatUint(id.StartTicks, 10)
	csessions := filepath.Join(w.ConfigDir, "sessions")
	entry, _ := json.Marshal(claude.Entry{PID: cpid, SessionID: uuid.NewString(), Cwd: "/", StartedAt: time.Now().UnixMilli(),
		ProcStart: procStart, PidDomain: domain, MessagingSocketPath: csock.path, Name: "planted-claude", Kind: "interactive"})
	key, _ := json.Marshal(claude.KeyFile{PeerToken: "planted-peer-token", ProcStart: procStart, PidDomain: domain})
	if err := safefile.WriteAtomic(filepath.Join(csessions, strconv.Itoa(cpid)+".json"), entry); err != nil {
		t.Fatal(err)
	}
	if err := safefile.WriteAtomic(filepath.Join(csessions, claude.KeyFileName(cpid, csock.path)), key); err != nil {
		t.Fatal(err)
	}

	for _, s := range g.Listed(t) {
		if (s.PID == qpid || s.PID == cpid) && s.Reachable {
			t.Errorf("gateway sessions lists a planted record as reachable: %+v", s)
		}
	}
	for _, to := range []string{addressing.UDS(qsock.path), addressing.UDS(csock.path), "planted-qwen", "planted-claude"} {
		out, code, _ := g.Run(t, "send", "--json", to, "for the record's own process only")
		var flat bytes.Buffer
		_ = json.Compact(&flat, []byte(out))
		t.Logf("send to %s: exit %d: %.400s", to, code, flat.String())
	}
	// What a send writes, it writes before `gateway send` returns; the
	// listing's probes are empty connections.
	for _, p := range []*planted{qsock, csock} {
		conns, got := p.read()
		t.Logf("%s: %d connections, %d bytes, replyToken seen: %v", p.path, conns, len(got), bytes.Contains(got, replyToken))
		if len(got) != 0 {
			t.Errorf("the planted socket %s read %d bytes (replyToken in them: %v): %.200q",
				p.path, len(got), bytes.Contains(got, replyToken), got)
		}
	}
}
