package uds

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
)

// startSleeper runs a copy of the test binary that sleeps (see TestMain) and
// kills it at cleanup.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=sleep")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// reapedPid returns the pid of a child that has exited and been waited for.
func reapedPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestIdentifyOwnProcess(t *testing.T) {
	pid := os.Getpid()
	id, err := Identify(pid)
	if err != nil {
		t.Fatalf("Identify(self): %v", err)
	}
	t.Run("reading twice gives the same identity", func(t *testing.T) {
		again, err := Identify(pid)
		if err != nil || again != id {
			t.Errorf("second Identify = %+v, %v; first was %+v", again, err, id)
		}
	})
	t.Run("the fields agree with what the kernel shows elsewhere", func(t *testing.T) {
		if id.PID != pid || id.StartTicks == 0 {
			t.Errorf("pid %d start %d", id.PID, id.StartTicks)
		}
		if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(id.BootID) {
			t.Errorf("BootID %q is not a UUID", id.BootID)
		}
		var st syscall.Stat_t
		if err := syscall.Stat("/proc/self/ns/pid", &st); err != nil || st.Ino != id.PidNS {
			t.Errorf("PidNS %d, stat of /proc/self/ns/pid says %d (%v)", id.PidNS, st.Ino, err)
		}
		if id.MachineID == "" || strings.ContainsAny(id.MachineID, " \n") {
			t.Errorf("MachineID %q", id.MachineID)
		}
	})
	t.Run("a child started later has later start ticks and the same namespace", func(t *testing.T) {
		child := startSleeper(t)
		cid, err := Identify(child.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if cid.StartTicks < id.StartTicks || cid.PidNS != id.PidNS || cid.BootID != id.BootID || cid.MachineID != id.MachineID {
			t.Errorf("child %+v vs self %+v", cid, id)
		}
	})
}

func TestAlive(t *testing.T) {
	pidMax := 1 << 22
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		pidMax, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	tests := []struct {
		name string
		pid  func(t *testing.T) int
		want bool
	}{
		{"our own process is alive", func(*testing.T) int { return os.Getpid() }, true},
		{"a running child is alive", func(t *testing.T) int { return startSleeper(t).Process.Pid }, true},
		{"pid 1 is alive even when it is not ours", func(*testing.T) int { return 1 }, true},
		{"a child that exited and was reaped is not alive", reapedPid, false},
		{"a pid above pid_max is not alive", func(*testing.T) int { return pidMax + 1 }, false},
		{"pid 0, which names our process group, is not alive", func(*testing.T) int { return 0 }, false},
		{"pid -1, which names every process, is not alive", func(*testing.T) int { return -1 }, false},
		{"a pid that would wrap to -1 in the kernel is not alive", func(*testing.T) int { return 1<<32 - 1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Alive(tt.pid(t)); got != tt.want {
				t.Errorf("Alive = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDeadProcessHasNoIdentity(t *testing.T) {
	pid := reapedPid(t)
	if _, err := StartTicks(pid); !errors.Is(err, ErrNoProcess) {
		t.Errorf("StartTicks(dead) = %v, want ErrNoProcess", err)
	}
	if _, err := Identify(pid); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Identify(dead) = %v, want ErrNoProcess", err)
	}
	if _, err := PidNamespace(pid); !errors.Is(err, ErrNoProcess) {
		t.Errorf("PidNamespace(dead) = %v, want ErrNoProcess", err)
	}
}

func TestLstartMatchesPs(t *testing.T) {
	ps, err := exec.LookPath("ps")
	testutil.Need(t, err == nil, "ps is not installed (procps missing), so there is nothing to compare Lstart with")
	for name, pid := range map[string]int{"our process": os.Getpid(), "pid 1": 1} {
		t.Run("Lstart of "+name+" is what ps prints, give or take ps's own rounding", func(t *testing.T) {
			got, err := Lstart(pid)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(ps, "-o", "lstart=", "-p", strconv.Itoa(pid))
			cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("ps: %v", err)
			}
			want := strings.TrimRight(string(out), "\n")
			if got == want {
				return
			}
			// procps estimates boot time as now - /proc/uptime, each
			// truncated to the second, so it can land one second either
			// side of the kernel's btime. More than that is our bug.
			g, err1 := time.Parse(lstartLayout, got)
			w, err2 := time.Parse(lstartLayout, strings.TrimSpace(want))
			if err1 != nil || err2 != nil {
				t.Fatalf("Lstart %q vs ps %q: %v %v", got, want, err1, err2)
			}
			if d := g.Sub(w); d < -time.Second || d > time.Second {
				t.Fatalf("Lstart = %q, ps says %q", got, want)
			}
			t.Logf("Lstart %q, ps %q: one second apart, ps's boot-time rounding", got, want)
		})
	}
}

func TestMachineIDNamesTheMountThatFixesAMissingOne(t *testing.T) {
	dir := t.TempDir()
	present := dir + "/present"
	if err := os.WriteFile(present, []byte("0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		files   []string
		want    string // the id, or "" for an error
		missing bool   // the error is ErrNoMachineID
	}{
		{"the first file found is read", []string{present, dir + "/none"}, "0123456789abcdef0123456789abcdef", false},
		{"the fallback is read when the first is missing", []string{dir + "/none", present}, "0123456789abcdef0123456789abcdef", false},
		{"neither file: the error names the mount", []string{dir + "/none", dir + "/neither"}, "", true},
		{"an unreadable one is not called missing", []string{dir}, "", false},
	}
	saved := machineIDFiles
	t.Cleanup(func() { machineIDFiles = saved })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			machineIDFiles = tt.files
			id, err := MachineID()
			if id != tt.want || (err == nil) != (tt.want != "") {
				t.Fatalf("MachineID() = %q, %v; want %q", id, err, tt.want)
			}
			if got := errors.Is(err, ErrNoMachineID); got != tt.missing {
				t.Fatalf("errors.Is(%v, ErrNoMachineID) = %v, want %v", err, got, tt.missing)
			}
			if tt.missing && !strings.Contains(err.Error(), "-v /etc/machine-id:/etc/machine-id:ro") {
				t.Fatalf("the error %q does not name the mount", err)
			}
		})
	}
}
