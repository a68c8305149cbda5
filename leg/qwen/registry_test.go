package qwen

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/uds"
)

const sampleRecord = `{
  "schemaVersion": 1,
  "pid": 41337,
  "procStart": "b00t-1:8895124",
  "pidNs": 4026531836,
  "sessionId": "8e016be8-5b48-4c13-ad22-1f5326ae64ac",
  "cwd": "/home/me/project",
  "name": "project-3f",
  "startedAt": 1788959000000,
  "qwenVersion": "0.23.0",
  "kind": "tui",
  "ipcPath": "/run/user/1000/qwen-socks/41337.sock",
  "ipcToken": "c0ffee"
}`

func TestParseRecord(t *testing.T) {
	base := Record{PID: 41337, ProcStart: "b00t-1:8895124", PidNS: 4026531836, SessionID: "8e016be8-5b48-4c13-ad22-1f5326ae64ac",
		Cwd: "/home/me/project", Name: "project-3f", StartedAt: 1788959000000, QwenVersion: "0.23.0", Kind: "tui",
		IPCPath: "/run/user/1000/qwen-socks/41337.sock", IPCToken: "c0ffee"}
	with := func(f func(*Record)) Record { r := base; f(&r); return r }
	edit := func(old, new string) string { return strings.Replace(sampleRecord, old, new, 1) }
	tests := []struct {
		name string
		in   string
		want Record
		err  error
	}{
		{"the protocol page's example reads whole", sampleRecord, base, nil},
		{"a newer schema is skipped, not deleted", edit(`"schemaVersion": 1`, `"schemaVersion": 2`), Record{}, ErrNewerSchema},
		{"an older schema reads", edit(`"schemaVersion": 1`, `"schemaVersion": 0`), base, nil},
		{"no schema version is unusable", edit(`"schemaVersion": 1,`, ``), Record{}, ErrUnusableRecord},
		{"a pid written 41337.0 is the integer 41337", edit(`41337,`, `41337.0,`), base, nil},
		{"a fractional pid is unusable", edit(`41337,`, `41337.5,`), Record{}, ErrUnusableRecord},
		{"a zero pid is unusable", edit(`41337,`, `0,`), Record{}, ErrUnusableRecord},
		{"a string pid is unusable", edit(`41337,`, `"41337",`), Record{}, ErrUnusableRecord},
		{"a numeric name is unusable", edit(`"project-3f"`, `3`), Record{}, ErrUnusableRecord},
		{"an infinite startedAt is unusable", edit(`1788959000000`, `1e999`), Record{}, ErrUnusableRecord},
		{"a non-string procStart reads as null", edit(`"b00t-1:8895124"`, `7`), with(func(r *Record) { r.ProcStart = "" }), nil},
		{"a null pidNs reads as null", edit(`4026531836`, `null`), with(func(r *Record) { r.PidNS = 0 }), nil},
		{"a fractional pidNs matches no namespace", edit(`4026531836`, `1.5`), with(func(r *Record) { r.PidNS = 0 }), nil},
		{"a kind outside the grammar is dropped", edit(`"tui"`, `"Tui"`), with(func(r *Record) { r.Kind = "" }), nil},
		{"a kind must start with a letter", edit(`"tui"`, `"9x"`), with(func(r *Record) { r.Kind = "" }), nil},
		{"an unknown kind in the grammar is kept", edit(`"tui"`, `"voice-relay"`), with(func(r *Record) { r.Kind = "voice-relay" }), nil},
		{"an empty ipcPath means not messageable", edit(`"/run/user/1000/qwen-socks/41337.sock"`, `""`), with(func(r *Record) { r.IPCPath = "" }), nil},
		{"unknown fields are ignored", edit(`"kind"`, `"future": [1], "kind"`), base, nil},
		{"a repeated key is unusable", edit(`"kind": "tui"`, `"kind": "tui", "kind": "serve"`), Record{}, ErrUnusableRecord},
		{"keys match case exactly", edit(`"pid"`, `"PID"`), Record{}, ErrUnusableRecord},
		{"an array is unusable", `[]`, Record{}, ErrUnusableRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRecord([]byte(tt.in))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRecordMarshal(t *testing.T) {
	ours := Record{PID: 77, ProcStart: "boot:12", PidNS: 4026531836, SessionID: "s-1", Cwd: "/w", Name: "gateway",
		StartedAt: 1700000000123, Kind: KindExternal, IPCPath: "/run/user/0/qwen-socks/77.sock", IPCToken: NewIPCToken()}
	t.Run("our record is laid out as Qwen Code writes one and reads back equal", func(t *testing.T) {
		b, err := ours.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		want := "{\n  \"schemaVersion\": 1,\n  \"pid\": 77,\n  \"procStart\": \"boot:12\",\n  \"pidNs\": 4026531836,\n" +
			"  \"sessionId\": \"s-1\",\n  \"cwd\": \"/w\",\n  \"name\": \"gateway\",\n  \"startedAt\": 1700000000123,\n" +
			"  \"qwenVersion\": null,\n  \"kind\": \"external\",\n  \"ipcPath\": \"/run/user/0/qwen-socks/77.sock\",\n" +
			"  \"ipcToken\": \"" + string(ours.IPCToken) + "\"\n}"
		if string(b) != want {
			t.Fatalf("got\n%s\nwant\n%s", b, want)
		}
		back, err := ParseRecord(b)
		if err != nil || back != ours {
			t.Fatalf("read back %+v, %v", back, err)
		}
	})
	t.Run("unknown identity fields are written as null off Linux, and refused on it", func(t *testing.T) {
		r := ours
		r.ProcStart, r.PidNS = "", 0
		b, err := r.Marshal()
		if runtime.GOOS == "linux" {
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("err = %v", err)
			}
			return
		}
		if err != nil || !strings.Contains(string(b), `"procStart": null`) || !strings.Contains(string(b), `"pidNs": null`) {
			t.Fatalf("got %s, %v", b, err)
		}
	})
	bad := []struct {
		name string
		edit func(*Record)
	}{
		{"a zero pid", func(r *Record) { r.PID = 0 }},
		{"a blank session id", func(r *Record) { r.SessionID = " " }},
		{"a name that flattens to nothing", func(r *Record) { r.Name = "\u200b\n" }},
		{"a kind with capitals", func(r *Record) { r.Kind = "External" }},
		{"a short ipcToken", func(r *Record) { r.IPCToken = "abc" }},
		{"an upper-case ipcToken", func(r *Record) { r.IPCToken = Token(strings.ToUpper(string(NewIPCToken()))) }},
		{"a relative ipcPath", func(r *Record) { r.IPCPath = "run/77.sock" }},
		{"a procStart without ticks", func(r *Record) { r.ProcStart = "boot" }},
		{"a procStart with letters for ticks", func(r *Record) { r.ProcStart = "boot:12a" }},
	}
	for _, tt := range bad {
		t.Run("a record with "+tt.name+" is not written", func(t *testing.T) {
			r := ours
			tt.edit(&r)
			if _, err := r.Marshal(); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	t.Run("an absent kind reads as tui", func(t *testing.T) {
		if (Record{}).DisplayKind() != KindTUI || ours.DisplayKind() != KindExternal {
			t.Fatal("DisplayKind is wrong")
		}
	})
}

// facts is a ProcessFacts for tests: pids in alive are running, with the
// procStart given ("" when it cannot be read).
type facts struct {
	ns    uint64
	boot  string
	alive map[int]string
}

func (f facts) PidNS() (uint64, bool)  { return f.ns, f.ns != 0 }
func (f facts) BootID() (string, bool) { return f.boot, f.boot != "" }
func (f facts) Alive(pid int) bool     { _, ok := f.alive[pid]; return ok }
func (f facts) ProcStart(pid int) (string, bool) {
	s, ok := f.alive[pid]
	return s, ok && s != ""
}

func TestJudge(t *testing.T) {
	host := facts{ns: 10, boot: "B", alive: map[int]string{41: "B:500", 42: "", 43: "B:900"}}
	rec := Record{PID: 41, PidNS: 10, ProcStart: "B:500"}
	with := func(f func(*Record)) Record { r := rec; f(&r); return r }
	tests := []struct {
		name  string
		file  string
		r     Record
		facts facts
		want  Verdict
	}{
		{"a running process with the same start is live", "41.json", rec, host, VerdictLive},
		{"the minted name form is read the same way", "41-0a1b2c3d.json", rec, host, VerdictLive},
		{"a name for another pid is ignored", "40.json", rec, host, VerdictMisnamed},
		{"a zero-padded name agrees with nothing", "041.json", rec, host, VerdictMisnamed},
		{"an upper-case suffix is not a record name", "41-0A1B2C3D.json", rec, host, VerdictMisnamed},
		{"another pid namespace is foreign", "41.json", with(func(r *Record) { r.PidNS = 11 }), host, VerdictForeign},
		{"no namespace in the record is foreign to a Linux reader", "41.json", with(func(r *Record) { r.PidNS = 0 }), host, VerdictForeign},
		{"another boot is foreign, even with the pid running", "41.json", with(func(r *Record) { r.ProcStart = "A:500" }), host, VerdictForeign},
		{"a boot id we cannot read makes every boot foreign", "41.json", rec, facts{ns: 10, alive: host.alive}, VerdictForeign},
		{"an empty boot id before the colon is foreign", "41.json", with(func(r *Record) { r.ProcStart = ":500" }), host, VerdictForeign},
		{"a procStart without a colon names no boot, and a reused pid is dead", "41.json", with(func(r *Record) { r.ProcStart = "500" }), host, VerdictDead},
		{"a dead pid is dead", "44.json", with(func(r *Record) { r.PID = 44 }), host, VerdictDead},
		{"a dead pid without procStart is dead too, as Qwen Code sweeps it", "44.json", with(func(r *Record) { r.PID = 44; r.ProcStart = "" }), host, VerdictDead},
		{"a reused pid (later start) is dead", "43.json", with(func(r *Record) { r.PID = 43 }), host, VerdictDead},
		{"a running pid without procStart is live", "43.json", with(func(r *Record) { r.PID = 43; r.ProcStart = "" }), host, VerdictLive},
		{"a running pid whose start cannot be read is live", "42.json", with(func(r *Record) { r.PID = 42; r.ProcStart = "B:1" }), host, VerdictLive},
		{"off Linux, a record without namespace or boot is judged by pid", "41.json", with(func(r *Record) { r.PidNS = 0; r.ProcStart = "" }),
			facts{alive: host.alive}, VerdictLive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Judge(tt.file, tt.r, tt.facts)
			if got != tt.want {
				t.Fatalf("Judge = %v, want %v", got, tt.want)
			}
			if got.Sweepable() != (tt.want == VerdictDead) {
				t.Fatalf("Sweepable = %v for %v", got.Sweepable(), got)
			}
			// Facts that answer Alive and ProcStart in one look (as
			// HostFacts does) are judged alike.
			if got := Judge(tt.file, tt.r, oneLook{tt.facts}); got != tt.want {
				t.Fatalf("Judge with one look = %v, want %v", got, tt.want)
			}
		})
	}
}

// oneLook is facts answering through LiveProcStart.
type oneLook struct{ facts }

func (f oneLook) LiveProcStart(pid int) (string, bool, bool) {
	if !f.Alive(pid) {
		return "", false, false
	}
	s, ok := f.ProcStart(pid)
	return s, true, ok
}

func TestHostFactsTellLivenessAndStartInOneLookAsApart(t *testing.T) {
	var h HostFacts
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal("cannot run a child:", err)
	}
	for _, pid := range []int{os.Getpid(), os.Getppid(), child.Process.Pid} {
		tok, alive, known := h.LiveProcStart(pid)
		wantTok, wantKnown := h.ProcStart(pid)
		if want := h.Alive(pid); alive != want {
			t.Fatalf("pid %d: alive %v, Alive says %v", pid, alive, want)
		}
		if alive && (tok != wantTok || known != wantKnown) {
			t.Fatalf("pid %d: %q %v, ProcStart says %q %v", pid, tok, known, wantTok, wantKnown)
		}
	}
	if _, alive, _ := h.LiveProcStart(child.Process.Pid); alive {
		t.Fatal("a child that exited and was reaped is alive") // (unless its pid was reused at once)
	}
}

func TestMayReplace(t *testing.T) {
	host := facts{ns: 10, boot: "B", alive: map[int]string{41: "B:500"}}
	rec := func(f func(*Record)) []byte {
		r := Record{PID: 41, PidNS: 10, ProcStart: "B:100", SessionID: "old", Name: "n", Cwd: "/"}
		if f != nil {
			f(&r)
		}
		b, err := r.encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		data []byte
		want bool
	}{
		{"a record an earlier process with our pid left is replaced", rec(nil), true},
		{"our own live record is not replaced (use a suffix)", rec(func(r *Record) { r.ProcStart = "B:500" }), false},
		{"a record from another namespace is kept", rec(func(r *Record) { r.PidNS = 11 }), false},
		{"a record from another boot is kept", rec(func(r *Record) { r.ProcStart = "A:100" }), false},
		{"a record without procStart cannot be proved stale", rec(func(r *Record) { r.ProcStart = "" }), false},
		{"a record for another pid is kept", rec(func(r *Record) { r.PID = 40 }), false},
		{"a newer schema is kept", []byte(`{"schemaVersion": 2}`), false},
		{"junk is replaced", []byte(`not json`), true},
		{"an unusable record is replaced", []byte(`{"schemaVersion": 1, "pid": "x"}`), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MayReplace(tt.data, 41, host); got != tt.want {
				t.Fatalf("MayReplace = %v", got)
			}
		})
	}
	t.Run("without our own start token nothing is proved stale", func(t *testing.T) {
		if MayReplace(rec(nil), 41, facts{ns: 10, boot: "B", alive: map[int]string{41: ""}}) {
			t.Fatal("replaced")
		}
	})
}

func TestSameIncarnation(t *testing.T) {
	a := Record{PID: 1, PidNS: 2, ProcStart: "b:3", StartedAt: 4, Name: "x"}
	b := a
	b.Name, b.SessionID, b.IPCPath = "y", "swapped", "/new"
	if !SameIncarnation(a, b) {
		t.Fatal("a patched record is a new incarnation")
	}
	b.StartedAt = 5
	if SameIncarnation(a, b) {
		t.Fatal("a re-registered record is the same incarnation")
	}
}

func TestClassifyProbe(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Reach
	}{
		{"a connection is alive", nil, ReachAlive},
		{"a full backlog is alive", uds.ErrBusy, ReachAlive},
		{"no socket file is dead", uds.ErrNoSocket, ReachDead},
		{"a refused connection is dead", uds.ErrRefused, ReachDead},
		{"a timeout is unknown", uds.ErrTimeout, ReachUnknown},
		{"anything else is unknown", errors.New("EACCES"), ReachUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClassifyProbe(tt.err); got != tt.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestHostFactsJudgeThisProcessLive(t *testing.T) {
	var f HostFacts
	ns, tok := identity(t)
	r := Record{PID: os.Getpid(), PidNS: ns, ProcStart: tok}
	if v := Judge(RecordFileName(os.Getpid(), ""), r, f); v != VerdictLive {
		t.Fatalf("this process judged %v", v)
	}
	r.ProcStart = tok + "0"
	if v := Judge(RecordFileName(os.Getpid(), ""), r, f); v != VerdictDead {
		t.Fatalf("a reused pid judged %v", v)
	}
	if isZombie(os.Getpid()) {
		t.Fatal("this process is a zombie")
	}
}

func TestAZombieIsNotAlive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a zombie is told from /proc, on Linux")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal("cannot start true:", err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	// Until Wait reaps it, the exited child is a zombie: kill(pid, 0)
	// still succeeds, and only the state in /proc tells.
	deadline := time.Now().Add(10 * time.Second)
	for !isZombie(pid) {
		if time.Now().After(deadline) {
			t.Fatal("the child never became a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !uds.Alive(pid) {
		t.Fatal("kill(pid, 0) already fails: the test proves nothing")
	}
	if (HostFacts{}).Alive(pid) {
		t.Fatal("a zombie counted as alive")
	}
}
