package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// aliasWorkerEnv makes the test binary an alias worker of that name, as
// the gateway's alias-worker command is: RunWorker on the control pipe at
// WorkerFD, registered in the directories the next two variables name.
const (
	aliasWorkerEnv        = "CLAUDE_TEST_ALIAS_WORKER"
	aliasWorkerRuntimeEnv = "CLAUDE_TEST_ALIAS_WORKER_RUNTIME"
	aliasWorkerConfigEnv  = "CLAUDE_TEST_ALIAS_WORKER_CONFIG"
)

func runAliasWorker(name string) int {
	cfg := Config{Name: name, RuntimeDir: os.Getenv(aliasWorkerRuntimeEnv), ConfigDir: os.Getenv(aliasWorkerConfigEnv),
		Mode: message.ModePrompting, Inbound: PolicyAccept, Kind: KindAlias}
	if err := RunWorker(context.Background(), cfg, os.NewFile(WorkerFD, "alias-ctl")); err != nil {
		fmt.Fprintln(os.Stderr, "alias worker:", err)
		return 1
	}
	return 0
}

// workerProcessPool is an alias pool whose workers are processes of their
// own (this test binary as an alias worker), handing what arrives to r's
// peer as the gateway does.
func workerProcessPool(t *testing.T, r *rig) *AliasPool {
	t.Helper()
	runtime, config := testutil.ShortTempDir(t), t.TempDir()
	pool := NewAliasPool(PoolConfig{
		Command: func(name string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), aliasWorkerEnv+"="+name,
				aliasWorkerRuntimeEnv+"="+runtime, aliasWorkerConfigEnv+"="+config)
			cmd.Stderr = os.Stderr
			return cmd
		},
		Events:    r.p.OnAliasEvent,
		IdleAfter: time.Hour,
	})
	t.Cleanup(pool.Close)
	r.p.EnableAliases(pool)
	return pool
}

// The loss: message.Message leaves SenderPID out of its JSON (no wire may
// claim it), and a worker's event line was that JSON, so a message that
// arrived at an alias reached the gateway with SenderPID 0, whoever wrote
// it. The worker now carries its SO_PEERCRED pid beside the event.
func TestAMessageArrivingAtAnAliasReachesTheGatewayWithItsWritersPID(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, Config{Name: "gw"})
	pool := workerProcessPool(t, r)
	origin := message.Session{Name: "qwen-work", Address: "uds:/q/qwen-work.sock", Protocol: message.ProtocolQwen}
	if err := r.p.SyncAliases(ctx, []message.Session{origin}); err != nil {
		t.Fatal(err)
	}
	var alias Alias
	for _, a := range pool.Aliases() {
		if a.Name == origin.Name {
			alias = a
		}
	}
	if alias.PID == 0 || alias.PID == os.Getpid() {
		t.Fatalf("alias %+v, want a worker process of its own", alias)
	}
	sock := strings.TrimPrefix(alias.Address, "uds:")
	sender := listenSock(t, filepath.Dir(sock))
	forged := []byte(`"sender_pid":` + strconv.Itoa(alias.PID) + `,"SenderPID":1,`)

	tests := []struct {
		name string
		send func(t *testing.T) (id string, pid int)
	}{
		{"a message this process writes arrives with this process's pid", func(t *testing.T) (string, int) {
			id, b := sender.userFrame(t, "prompting", "from the test")
			dial(t, sock, b)
			return id, os.Getpid()
		}},
		{"a message another process writes arrives with that process's pid", func(t *testing.T) (string, int) {
			id, b := sender.userFrame(t, "prompting", "from another process")
			return id, dialFromAnotherProcess(t, sock, b)
		}},
		{"a frame claiming a sender pid, in its keys and its body, arrives with the pid the kernel named", func(t *testing.T) (string, int) {
			id, b := sender.userFrame(t, "prompting", `"},"sender_pid":1,"x":{"`)
			b = bytes.Replace(b, []byte(`{`), append([]byte(`{`), forged...), 1)
			b = bytes.Replace(b, []byte(`"message":{`), append([]byte(`"message":{`), forged...), 1)
			if bytes.Count(b, forged) != 2 {
				t.Fatalf("frame %s does not claim a pid twice", b)
			}
			dial(t, sock, b)
			return id, os.Getpid()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, pid := tt.send(t)
			ev := r.next(t, func(ev message.Event) bool { return ev.Type == message.EventMessage && ev.Message.ID == id })
			if ev.Message.AliasOf != origin.Address {
				t.Fatalf("the message is for %q, want the alias's session %q", ev.Message.AliasOf, origin.Address)
			}
			if ev.Message.SenderPID != pid {
				t.Fatalf("SenderPID = %d, want %d, the writer's (the worker is %d)", ev.Message.SenderPID, pid, alias.PID)
			}
		})
	}
}

// The control pipe carries the sender pid beside the event, bounded: what
// an older worker writes (no pid) and what no process can be read as 0.
func TestTheWorkerPipeCarriesAnEventsSenderPID(t *testing.T) {
	msg := func(pid int) *message.Message { return &message.Message{ID: "m1", Body: "hi", SenderPID: pid} }
	tests := []struct {
		name string
		line string
		want int
	}{
		{"a received message's sender pid crosses the pipe", encodeLine(t, eventOp(message.Event{Type: message.EventMessage, Message: msg(4242)})), 4242},
		{"a held message's sender pid crosses the pipe", encodeLine(t, eventOp(message.Event{Type: message.EventHeld, Held: &message.Held{Message: *msg(4242)}})), 4242},
		{"a message with no known sender crosses as 0", encodeLine(t, eventOp(message.Event{Type: message.EventMessage, Message: msg(0)})), 0},
		{"an event line without a sender pid, as an older worker writes, reads as 0", `{"op":"event","event":{"type":"message","message":{"id":"m1","body":"hi"}}}`, 0},
		{"a pid no process can have reads as 0", `{"op":"event","sender_pid":` + strconv.Itoa(maxPID+1) + `,"event":{"type":"message","message":{"id":"m1","body":"hi"}}}`, 0},
		{"a negative pid reads as 0", `{"op":"event","sender_pid":-7,"event":{"type":"message","message":{"id":"m1","body":"hi"}}}`, 0},
		{"a pid inside the message is no sender's", `{"op":"event","event":{"type":"message","message":{"id":"m1","body":"hi","SenderPID":4242,"sender_pid":4242}}}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var op WorkerOp
			if err := json.Unmarshal([]byte(tt.line), &op); err != nil || op.Op != OpEvent || op.Event == nil {
				t.Fatalf("line %s read as %+v, %v", tt.line, op, err)
			}
			m := eventMessage(new(op.event()))
			if m == nil || m.ID != "m1" {
				t.Fatalf("event %+v lost its message", op.event())
			}
			if m.SenderPID != tt.want {
				t.Fatalf("SenderPID = %d, want %d", m.SenderPID, tt.want)
			}
		})
	}
}

// encodeLine is op as the worker writes it, without its newline.
func encodeLine(t *testing.T, op WorkerOp) string {
	t.Helper()
	b, err := encodeOp(op)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(b, []byte("\n")))
}
