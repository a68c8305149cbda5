package peersuite

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/qwen"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// WriteQwenGhost publishes in w a live record of process pid, the owner of
// the inbox at path, named name and pointing at that inbox under another
// session id, as a record left stale by /clear would: a send to it is
// misaddressed.
func WriteQwenGhost(t *testing.T, w *gatewaytest.World, name string, pid int, path string, token qwen.Token) {
	t.Helper()
	procStart, ok := qwen.ProcStartToken(pid)
	if !ok {
		t.Fatalf("no procStart for pid %d", pid)
	}
	ns, err := uds.PidNamespace(pid)
	if err != nil {
		t.Fatal(err)
	}
	rec := qwen.Record{PID: pid, ProcStart: procStart, PidNS: ns, SessionID: uuid.NewString(), Cwd: "/",
		Name: name, StartedAt: time.Now().UnixMilli(), Kind: "external", IPCPath: path, IPCToken: token}
	b, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(qwen.SessionsDir(w.QwenHome), qwen.RecordFileName(pid, qwen.NewSuffix()))
	if err := safefile.WriteAtomic(file, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(file) })
}
