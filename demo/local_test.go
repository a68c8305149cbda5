package demo_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/demo"
	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

func TestMain(m *testing.M) { os.Exit(gatewaytest.Main(m)) }

// local is a running `gateway demo-local` and what it printed.
type local struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	mu     sync.Mutex
	out    strings.Builder
	change chan struct{}
}

// startLocal runs `gateway demo-local args...` in w and waits until it
// prints ready (what to try next; with --json, its sessions); it is killed
// at the test's end if still running.
func startLocal(t *testing.T, w *gatewaytest.World, ready string, args ...string) *local {
	t.Helper()
	cmd := exec.Command(gatewaytest.Bin(t), append([]string{"demo-local"}, args...)...)
	cmd.Env = w.Env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &local{cmd: cmd, done: make(chan struct{}), change: make(chan struct{})}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l.mu.Lock()
			l.out.WriteString(sc.Text() + "\n")
			close(l.change)
			l.change = make(chan struct{})
			l.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	// Wait only once the output is read to its end: the children hold it
	// open too, so this also waits for them.
	go func() { <-read; l.err = cmd.Wait(); close(l.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		// Children that outlived it (a broken life line) hold its output
		// open: they go too.
		for _, pid := range l.children() {
			if !gone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		<-l.done
		if t.Failed() {
			t.Logf("demo-local printed:\n%s", l.output())
		}
	})
	l.waitFor(t, ready)
	return l
}

func (l *local) output() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.String()
}

// waitFor waits until the output holds s.
func (l *local) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		l.mu.Lock()
		has, ch := strings.Contains(l.out.String(), s), l.change
		l.mu.Unlock()
		if has {
			return
		}
		select {
		case <-ch:
		case <-l.done:
			t.Fatalf("demo-local exited (%v) before printing %q", l.err, s)
		case <-deadline:
			t.Fatalf("demo-local never printed %q", s)
		}
	}
}

var pidLine = regexp.MustCompile(`(?m)^(demo-\w+) registered \(pid (\d+)\)`)

// children are the pids demo-local printed, as text or JSON.
func (l *local) children() []int {
	var pids []int
	for _, m := range pidLine.FindAllStringSubmatch(l.output(), -1) {
		if pid, _ := strconv.Atoi(m[2]); pid > 0 {
			pids = append(pids, pid)
		}
	}
	for _, m := range regexp.MustCompile(`"pid":(\d+)`).FindAllStringSubmatch(l.output(), -1) {
		if pid, _ := strconv.Atoi(m[1]); pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pids are the demo sessions' processes, as demo-local printed them.
func (l *local) pids(t *testing.T) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, m := range pidLine.FindAllStringSubmatch(l.output(), -1) {
		got[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(got) != 2 {
		t.Fatalf("demo-local named %v, want both demo sessions' pids", got)
	}
	return got
}

// leftBehind lists what in w names one of pids: registry entries, key
// files, Qwen records, sockets.
func leftBehind(w *gatewaytest.World, pids map[string]int) []string {
	var files []string
	for _, dir := range []string{filepath.Join(w.ConfigDir, "sessions"), filepath.Join(w.QwenHome, "sessions"),
		filepath.Join(w.Runtime, "cc-socks"), filepath.Join(w.Runtime, "qwen-socks")} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			for _, pid := range pids {
				p := strconv.Itoa(pid)
				if n := e.Name(); strings.HasPrefix(n, p+".") || strings.HasPrefix(n, p+"-") {
					files = append(files, filepath.Join(dir, n))
				}
			}
		}
	}
	return files
}

// gone reports whether pid has exited (a zombie not yet reaped by whoever
// inherited it counts as exited).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestDemoLocalSessionsAnswerThroughARealGatewayAndLeaveNothingBehind(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gateway")
	watch := g.WatchCLI(t)
	l := startLocal(t, w, "Ctrl-C stops both")
	pids := l.pids(t)

	for _, want := range []struct {
		name  string
		proto message.Protocol
	}{{demo.ClaudeName, message.ProtocolClaude}, {demo.QwenName, message.ProtocolQwen}} {
		s := g.WaitListed(t, want.name)
		if s.Protocol != want.proto || s.PID != pids[want.name] {
			t.Fatalf("%s listed as %+v, want protocol %s, pid %d", want.name, s, want.proto, pids[want.name])
		}
	}

	answered := func(from, body string) func(message.Event) bool {
		return func(ev message.Event) bool {
			return ev.Type == message.EventMessage && ev.Message != nil && ev.Message.FromName == from && ev.Message.Body == body
		}
	}
	t.Run("a send to each demo is delivered and answered by name", func(t *testing.T) {
		for _, name := range []string{demo.QwenName, demo.ClaudeName} {
			o, code := g.SendJSON(t, name, "hello "+name, "--wait")
			if code != 0 || o.Status != message.StatusDelivered {
				t.Fatalf("send to %s: exit %d, status %v, receipts %+v", name, code, o.Status, o.Receipts)
			}
			ev := watch.Wait(t, 20*time.Second, answered(name, name+" got: hello "+name))
			if leg := map[string]message.Protocol{demo.QwenName: message.ProtocolQwen, demo.ClaudeName: message.ProtocolClaude}[name]; ev.Leg != leg {
				t.Errorf("%s's answer came in on the %s leg", name, ev.Leg)
			}
		}
	})

	t.Run("demo-claude asks demo-qwen through the bridge and hears its answer", func(t *testing.T) {
		g.SendJSON(t, demo.ClaudeName, "ask "+demo.QwenName+" ping")
		// The ask reaches demo-qwen's Claude alias, is delivered to demo-qwen
		// (its receipt), and the answer comes back by name to demo-claude's
		// Qwen alias and on to demo-claude.
		ask := watch.Wait(t, 20*time.Second, func(ev message.Event) bool {
			return answered(demo.ClaudeName, "ping")(ev) && ev.Message.AliasOf != ""
		})
		watch.Wait(t, 20*time.Second, func(ev message.Event) bool {
			return answered(demo.QwenName, demo.QwenName+" got: ping")(ev) && ev.Message.AliasOf == ask.Message.From
		})
		watch.Wait(t, 20*time.Second, func(ev message.Event) bool {
			return ev.Type == message.EventReceipt && ev.ID > ask.ID && ev.Receipt.Status == message.StatusDelivered &&
				ev.Receipt.From == ask.Message.AliasOf
		})
		l.waitFor(t, demo.ClaudeName+"  <- "+demo.QwenName+`: "`+demo.QwenName+` got: ping"`)
	})

	t.Run("SIGTERM stops both demos, which leave nothing behind", func(t *testing.T) {
		if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-l.done:
		case <-time.After(20 * time.Second):
			t.Fatal("demo-local did not exit on SIGTERM")
		}
		if l.err != nil {
			t.Fatalf("demo-local exited with %v", l.err)
		}
		for name, pid := range pids {
			if !gone(pid) {
				t.Errorf("%s (pid %d) still runs", name, pid)
			}
		}
		if files := leftBehind(w, pids); len(files) > 0 {
			t.Errorf("left behind: %v", files)
		}
		testutil.EventuallyWithin(t, 20*time.Second, "the gateway lists no demo session", func() bool {
			ss := g.Listed(t)
			_, c := gatewaytest.FindSession(ss, demo.ClaudeName)
			_, q := gatewaytest.FindSession(ss, demo.QwenName)
			return !c && !q
		})
	})
}

func TestDemoSessionsDeregisterWhenDemoLocalIsKilled(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	l := startLocal(t, w, `{"sessions":`, "--json")
	var st demo.Started
	if err := json.Unmarshal([]byte(strings.SplitN(l.output(), "\n", 2)[0]), &st); err != nil || len(st.Sessions) != 2 {
		t.Fatalf("demo-local --json printed %q (%v), want both sessions", l.output(), err)
	}
	pids := map[string]int{}
	for _, s := range st.Sessions {
		pids[s.Name] = s.PID
	}
	if files := leftBehind(w, pids); len(files) != 5 {
		t.Fatalf("registered files %v, want 5: an entry, a key and a socket, a record and an inbox", files)
	}
	if err := l.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testutil.EventuallyWithin(t, 20*time.Second, "both demo sessions exit and remove their files", func() bool {
		return gone(pids[demo.ClaudeName]) && gone(pids[demo.QwenName]) && len(leftBehind(w, pids)) == 0
	})
}
