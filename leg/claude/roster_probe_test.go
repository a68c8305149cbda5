package claude

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/uds"
)

// sleeper is a live child process whose pid an entry can name.
func sleeper(t *testing.T) (pid int, procStart string) {
	t.Helper()
	c := exec.Command("sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	ticks, err := uds.StartTicks(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid, strconv.FormatUint(ticks, 10)
}

// deadPid is the pid of a child that has exited and been reaped. A pid
// reused at once is tried again, not skipped: a skip would pass the test.
func deadPid(t *testing.T) int {
	t.Helper()
	for range 5 {
		c := exec.Command("true")
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		if !uds.Alive(c.Process.Pid) {
			return c.Process.Pid
		}
	}
	t.Fatal("the pid of each of 5 reaped children was reused at once")
	return 0
}

// listening binds a socket that accepts and closes every connection
// without a word, until the test ends.
func listening(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
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
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
}

// listenEnv makes the test binary a session process of its own: it
// listens at the path after "close:" (accepting and closing every
// connection) or "hold:" (accepting and holding them), says "ready", and
// exits when its stdin closes.
const listenEnv = "CLAUDE_TEST_LISTEN"

func runListener(spec string) int {
	mode, path, _ := strings.Cut(spec, ":")
	ln, err := net.Listen("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	var held []net.Conn
	for {
		c, err := ln.Accept()
		if err != nil {
			for _, c := range held {
				c.Close()
			}
			return 1
		}
		if mode == "hold" {
			held = append(held, c)
			continue
		}
		c.Close()
	}
}

// listenerProcess starts a second process listening at path, as a real
// session listens on its own socket, and returns its pid and start time.
func listenerProcess(t *testing.T, path string, hold bool) (pid int, procStart string) {
	t.Helper()
	mode := "close:"
	if hold {
		mode = "hold:"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), listenEnv+"="+mode+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the listener process did not start: %q", line)
	}
	ticks, err := uds.StartTicks(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid, strconv.FormatUint(ticks, 10)
}

// silent leaves a socket file that nobody listens on (connect is refused).
func silent(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeSocket {
		t.Fatalf("no stale socket file at %s: %v", path, err)
	}
}

func writeEntry(t *testing.T, dir string, pid int, fields map[string]any) string {
	t.Helper()
	fields["pid"] = pid
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strconv.Itoa(pid)+".json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// registered is our own peer, registered and served, for roster tests.
func registered(t *testing.T) (*Leg, regEnv) {
	t.Helper()
	env := newRegEnv(t)
	p, err := Register(env.config())
	if err != nil {
		t.Fatal(err)
	}
	serveT(t, p)
	return p, env
}

func listedPids(t *testing.T, p *Leg) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := p.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, s := range ss {
		pids = append(pids, s.PID)
	}
	return pids
}

// TestRosterFiltersLikeTheRealCLI runs one entry at a time through
// Sessions, each against the rule the real CLI's roster applies to it
// (2.1.332: the sock / own-socket / spare-parked filter, then the pid
// domain, gone, procStart and connect-probe checks, then the sweep).
func TestRosterFiltersLikeTheRealCLI(t *testing.T) {
	const foreign = "linux:0123456789abcdef0123456789abcdef:pid:[4026531999]"
	type setup struct {
		pid    int
		fields map[string]any
	}
	tests := []struct {
		name       string
		setup      func(t *testing.T, p *Leg, dir string) setup
		wantListed bool
		wantSwept  bool
	}{
		{"a live session whose socket answers is listed", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, start := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock}}
		}, true, false},
		{"a live session whose socket file nobody listens on is neither listed nor swept", func(t *testing.T, p *Leg, dir string) setup {
			pid, start := sleeper(t)
			sock := filepath.Join(dir, "a.sock")
			silent(t, sock)
			return setup{pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock}}
		}, false, false},
		{"a live session without a socket file is not listed", func(t *testing.T, p *Leg, dir string) setup {
			pid, start := sleeper(t)
			return setup{pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": filepath.Join(dir, "none.sock")}}
		}, false, false},
		{"a recycled pid (alive, another start time) is neither listed nor swept though its socket answers", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, _ := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"procStart": "1", "pidDomain": p.pidDomain, "messagingSocketPath": sock}}
		}, false, false},
		{"a recycled pid in the lstart spelling is neither listed nor swept", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, _ := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"procStart": "Mon Jan  1 00:00:00 2001", "pidDomain": p.pidDomain, "messagingSocketPath": sock}}
		}, false, false},
		{"the lstart spelling of the right start time is listed", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, _ := listenerProcess(t, sock, false)
			lstart, err := uds.Lstart(pid)
			if err != nil {
				t.Fatal(err)
			}
			return setup{pid, map[string]any{"procStart": lstart, "pidDomain": p.pidDomain, "messagingSocketPath": sock}}
		}, true, false},
		{"an empty procStart in our pid domain counts as another start time", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, _ := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"procStart": "", "pidDomain": p.pidDomain, "messagingSocketPath": sock}}
		}, false, false},
		{"an entry without procStart is listed when its socket answers", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, _ := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"pidDomain": p.pidDomain, "messagingSocketPath": sock}}
		}, true, false},
		{"a dead pid in our pid domain is swept", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			silent(t, sock)
			return setup{deadPid(t), map[string]any{"procStart": "1", "pidDomain": p.pidDomain, "messagingSocketPath": sock}}
		}, false, true},
		{"a dead pid without pid domain whose socket is silent is swept", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			silent(t, sock)
			return setup{deadPid(t), map[string]any{"procStart": "1", "messagingSocketPath": sock}}
		}, false, true},
		{"an entry without pid domain is listed without a procStart check when its socket answers", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, _ := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"procStart": "1", "messagingSocketPath": sock}}
		}, true, false},
		{"another pid namespace's entry whose listener lives in ours is not listed", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, _ := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"procStart": "1", "pidDomain": foreign, "messagingSocketPath": sock}}
		}, false, false},
		{"a live session whose socket another process listens on is not listed", func(t *testing.T, p *Leg, dir string) setup {
			pid, start := sleeper(t)
			sock := filepath.Join(dir, "a.sock")
			listening(t, sock) // the test process, not pid
			return setup{pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock}}
		}, false, false},
		{"a session without pid domain whose socket another process listens on is not listed", func(t *testing.T, p *Leg, dir string) setup {
			pid, _ := sleeper(t)
			sock := filepath.Join(dir, "a.sock")
			listening(t, sock)
			return setup{pid, map[string]any{"messagingSocketPath": sock}}
		}, false, false},
		{"another pid namespace's entry with a silent socket is never swept, whatever its pid means here", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			silent(t, sock)
			return setup{deadPid(t), map[string]any{"procStart": "1", "pidDomain": foreign, "messagingSocketPath": sock}}
		}, false, false},
		{"an empty pid domain is another pid namespace: never swept", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			silent(t, sock)
			return setup{deadPid(t), map[string]any{"procStart": "1", "pidDomain": "", "messagingSocketPath": sock}}
		}, false, false},
		{"an entry without a socket is not listed, nor swept by the roster", func(t *testing.T, p *Leg, dir string) setup {
			return setup{deadPid(t), map[string]any{"procStart": "1", "pidDomain": p.pidDomain}}
		}, false, false},
		{"a spare session is not listed though its socket answers", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, start := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock, "spare": true}}
		}, false, false},
		{"a parked session is not listed though its socket answers", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, start := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock, "parkedJobId": ""}}
		}, false, false},
		{"a spare flag that is not true does not hide a session", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, start := listenerProcess(t, sock, false)
			return setup{pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock, "spare": false, "parkedJobId": nil}}
		}, true, false},
		{"a dead spare session is not swept by the roster", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			silent(t, sock)
			return setup{deadPid(t), map[string]any{"procStart": "1", "pidDomain": p.pidDomain, "messagingSocketPath": sock, "spare": true}}
		}, false, false},
		{"an entry naming our socket under another pid is not listed", func(t *testing.T, p *Leg, dir string) setup {
			pid, start := sleeper(t)
			return setup{pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": p.SocketPath()}}
		}, false, false},
		{"our own alias worker is not listed", func(t *testing.T, p *Leg, dir string) setup {
			sock := filepath.Join(dir, "a.sock")
			pid, start := listenerProcess(t, sock, false) // our child, as alias workers are
			return setup{pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock, "kind": KindAlias}}
		}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, env := registered(t)
			s := tt.setup(t, p, testutil.ShortTempDir(t))
			s.fields["sessionId"] = "s-" + strconv.Itoa(s.pid)
			path := writeEntry(t, env.sessionsDir(), s.pid, s.fields)
			pids := listedPids(t, p)
			if listed := slices.Contains(pids, s.pid); listed != tt.wantListed {
				t.Errorf("listed = %v, want %v (roster %v)", listed, tt.wantListed, pids)
			}
			if slices.Contains(pids, os.Getpid()) {
				t.Errorf("our own entry is listed")
			}
			_, err := os.Lstat(path)
			if swept := errors.Is(err, fs.ErrNotExist); swept != tt.wantSwept {
				t.Errorf("swept = %v, want %v", swept, tt.wantSwept)
			}
			if _, err := os.Lstat(env.entryPath()); err != nil {
				t.Errorf("our own entry went: %v", err)
			}
		})
	}
}

func TestRosterNeverListsItself(t *testing.T) {
	p, _ := registered(t)
	if pids := listedPids(t, p); len(pids) != 0 {
		t.Fatalf("roster of a directory holding only our entry = %v, want empty", pids)
	}
}

func TestRosterProbeIsBounded(t *testing.T) {
	p, env := registered(t)
	sock := filepath.Join(testutil.ShortTempDir(t), "a.sock")
	pid, start := listenerProcess(t, sock, false)
	writeEntry(t, env.sessionsDir(), pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock})

	// A probe that never completes on its own: only the roster's bound ends it.
	oldProbe, oldTimeout := probeSocket, probeTimeout
	t.Cleanup(func() { probeSocket, probeTimeout = oldProbe, oldTimeout })
	probeTimeout = 20 * time.Millisecond
	probeSocket = func(ctx context.Context, _ string, _ uds.Holder) error {
		<-ctx.Done()
		return ctx.Err()
	}
	done := make(chan []int, 1)
	go func() {
		// No deadline of our own: the bound must come from the roster.
		ss, err := p.Sessions(context.Background())
		if err != nil {
			t.Error(err)
		}
		var pids []int
		for _, s := range ss {
			pids = append(pids, s.PID)
		}
		done <- pids
	}()
	select {
	case pids := <-done:
		if len(pids) != 0 {
			t.Fatalf("a session whose probe timed out was listed: %v", pids)
		}
	case <-time.After(20 * time.Second): // a hang detector, not a speed check
		t.Fatal("the roster waited on a probe past its bound")
	}
}

func TestRosterListsASocketThatAcceptsButNeverAnswers(t *testing.T) {
	p, env := registered(t)
	sock := filepath.Join(testutil.ShortTempDir(t), "a.sock")
	// Accepts, then holds every connection open without a byte.
	pid, start := listenerProcess(t, sock, true)
	writeEntry(t, env.sessionsDir(), pid, map[string]any{"procStart": start, "pidDomain": p.pidDomain, "messagingSocketPath": sock})
	// The probe is an empty connection, as the real CLI's: connecting is
	// answer enough, and the roster does not wait for a word.
	if pids := listedPids(t, p); !slices.Equal(pids, []int{pid}) {
		t.Fatalf("roster = %v, want [%d]", pids, pid)
	}
}

func TestParseEntryTellsAbsentFromEmpty(t *testing.T) {
	tests := []struct {
		name                               string
		in                                 string
		hasProcStart, hasPidDomain, parked bool
	}{
		{"absent fields", `{"pid":1}`, false, false, false},
		{"empty strings are present", `{"pid":1,"procStart":"","pidDomain":""}`, true, true, false},
		{"null reads as absent", `{"pid":1,"procStart":null,"pidDomain":null,"parkedJobId":null}`, false, false, false},
		{"whitespace around values", `{ "pid" : 1 , "procStart" : "" , "spare" : true }`, true, false, true},
		{"spare true is parked", `{"pid":1,"spare":true}`, false, false, true},
		{"spare of another type is not", `{"pid":1,"spare":"true"}`, false, false, false},
		{"any string parkedJobId is parked", `{"pid":1,"parkedJobId":""}`, false, false, true},
		{"a numeric parkedJobId is not", `{"pid":1,"parkedJobId":7}`, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := ParseEntry([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if e.hasProcStart != tt.hasProcStart || e.hasPidDomain != tt.hasPidDomain || e.parked != tt.parked {
				t.Fatalf("hasProcStart %v hasPidDomain %v parked %v, want %v %v %v",
					e.hasProcStart, e.hasPidDomain, e.parked, tt.hasProcStart, tt.hasPidDomain, tt.parked)
			}
		})
	}
}
