package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/interop/claudecli"
	"github.com/sessiongateway/gateway/interop/qwencli"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeanthropic"
	"github.com/sessiongateway/gateway/testkit/fakeopenai"
	"github.com/sessiongateway/gateway/transport/uds/claude"
	"github.com/sessiongateway/gateway/transport/uds/qwen"
)

// A real Claude Code session and a real Qwen Code session exchange a
// message and its answer through the gateway, each by the other's name.
// Both run in the bypass review class (Claude: bypassPermissions as root
// needs IS_SANDBOX=1; Qwen: yolo, which scripted tool calls need anyway),
// so mode parity delivers both ways without a person.
func TestClaudeAndQwenExchangeAMessageAndItsAnswer(t *testing.T) {
	needInterop(t)
	needQwen(t)
	w := newWorld(t)
	ping := "ping-" + uuid.NewString()[:8]
	pong := "pong-" + uuid.NewString()[:8]

	qmodel := fakeopenai.Start(t, fakeopenai.CallToolOnce(ping, fakeopenai.SendMessageCall("work-it", pong), "answered"))
	qs := startQwenTUI(t, w, qmodel, qwencli.ModeYolo)
	trigger := "please-ping-qwen"
	cmodel := fakeanthropic.Start(t, fakeanthropic.Rules(fakeanthropic.Text("ok"),
		fakeanthropic.CallTools(trigger, []fakeanthropic.Call{{Tool: "SendMessage", Input: fmt.Sprintf(`{"to":%q,"message":%q}`, qs.Name(), ping)}}, "sent")))
	g := startGateway(t, w, "gateway-it")
	cs := claudecli.Start(t, claudecli.Options{
		APIURL: cmodel.URL(), Name: "work-it", ConfigDir: w.configDir, XDGRuntimeDir: w.runtime,
		Args: []string{"--permission-mode", "bypassPermissions"}, Env: []string{"IS_SANDBOX=1"},
	})
	waitAlias(t, g, qs.Name())
	waitQwenAlias(t, w, "work-it")
	// One roster, both protocols, each with its ref; neither alias shows.
	ss := g.sessions(t)
	byName := map[string]message.Session{}
	for _, s := range ss {
		byName[s.Name] = s
	}
	if c, q := byName["work-it"], byName[qs.Name()]; c.Protocol != message.ProtocolClaude || q.Protocol != message.ProtocolQwen ||
		q.Ref != qwencli.Ref(qs.SessionID()) || c.SessionID != cs.SessionID() || len(ss) != 2 {
		t.Fatalf("sessions = %+v", ss)
	}
	if err := cs.SendUserTurn(trigger); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := qmodel.WaitContains(ctx, ping); err != nil {
		t.Fatalf("the Qwen session never got the Claude session's message: %v", err)
	}
	req, err := cmodel.WaitContains(ctx, pong)
	if err != nil {
		t.Fatalf("the Claude session never got the Qwen session's answer: %v", err)
	}
	if !strings.Contains(req.Text(), `from-name="`+qs.Name()+`"`) {
		t.Errorf("the answer does not come from the Qwen session's name: %s", req.Text())
	}
}

// waitAlias waits until the gateway lists a session named name and its
// Claude-side alias worker is registered.
func waitAlias(t *testing.T, g *gateway, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(g.w.configDir, "sessions", "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if e, err := claude.ParseEntry(b); err == nil && e.Name == name && e.Kind == claude.KindAlias {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no alias of %q appeared", name)
}

// waitQwenAlias waits until the gateway's Qwen-side alias record named name
// is published.
func waitQwenAlias(t *testing.T, w *world, name string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(qwen.SessionsDir(w.qwenHome), "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if r, err := qwen.ParseRecord(b); err == nil && r.Name == name && r.Kind == qwen.KindAlias {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no qwen alias of %q appeared", name)
}

// An alias worker never outlives the gateway: killed without a chance to
// clean up, the gateway still takes its workers down, and each worker
// deregisters on the way out.
func TestAliasWorkersDieWithTheGateway(t *testing.T) {
	needQwen(t)
	w := newWorld(t)
	g := startGateway(t, w, "gateway-it")
	startEndpoint(t, w, "sdk-peer")
	waitAlias(t, g, "sdk-peer")
	var pid int
	files, _ := filepath.Glob(filepath.Join(w.configDir, "sessions", "*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if e, err := claude.ParseEntry(b); err == nil && e.Kind == claude.KindAlias && e.Name == "sdk-peer" {
			pid = e.PID
		}
	}
	if pid == 0 {
		t.Fatal("no alias worker entry")
	}
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = g.cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := os.Stat(filepath.Join(w.configDir, "sessions", strconv.Itoa(pid)+".json"))
		gone := syscall.Kill(pid, 0) != nil
		if gone && os.IsNotExist(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %d alive=%v, entry err=%v, after the gateway was killed", pid, !gone, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
