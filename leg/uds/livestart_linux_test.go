package uds

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestLiveStartFollowsAProcessUntilItExits(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	want, err := StartTicks(pid)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the first read pins it, the second asks the pin
		if got, ok := LiveStart(pid); !ok || got != want {
			t.Fatalf("ask %d: LiveStart = %d, %v; want %d, true", i, got, ok, want)
		}
	}

	// Killed but not reaped: a zombie is not live.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, _, err := ProcState(pid); err == nil && st == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child did not become a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, ok := LiveStart(pid); ok {
		t.Fatal("a zombie reads as live")
	}
	cmd.Wait()
	reaped = true
	if _, ok := LiveStart(pid); ok {
		t.Fatal("a reaped pid reads as live")
	}
}

func TestLiveStartOfThisProcessIsItsStartTicks(t *testing.T) {
	want, err := StartTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := LiveStart(os.Getpid()); !ok || got != want {
		t.Fatalf("LiveStart = %d, %v; want %d, true", got, ok, want)
	}
	if _, ok := LiveStart(-1); ok {
		t.Fatal("pid -1 reads as live")
	}
}
