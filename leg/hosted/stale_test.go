package hosted

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestWhatAKilledGatewayLeftOfACLIIsReapedAndNothingElse(t *testing.T) {
	const sid = "5c0e1d2f-stale-4000-8000-00000000abcd"
	// A launcher that runs the CLI as a child, as Qwen Code's does; the
	// child's command line names the session.
	group := func(script string) *exec.Cmd {
		c := exec.Command("sh", "-c", script)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); _ = c.Wait() })
		return c
	}
	launcher := group(`sh -c "sleep 300; : ` + sid + `" & sleep 300`)
	other := group(`sh -c "sleep 300; : ` + sid + `" & sleep 300`) // another group: not ours to reap
	time.Sleep(300 * time.Millisecond)                             // the children start
	_ = syscall.Kill(launcher.Process.Pid, syscall.SIGKILL)        // the launcher died with the gateway
	_ = launcher.Wait()
	if n := reapStale(launcher.Process.Pid, "some-other-session"); n != 0 {
		t.Fatalf("reaped %d processes of another session's id", n)
	}
	if n := reapStale(launcher.Process.Pid, sid); n != 1 {
		t.Fatalf("reaped %d processes, want the one child naming the session", n)
	}
	if n := reapStale(other.Process.Pid+100000, sid); n != 0 {
		t.Fatalf("reaped %d processes of no such group", n)
	}
	if err := syscall.Kill(other.Process.Pid, 0); err != nil {
		t.Fatalf("the other group's launcher is gone: %v", err)
	}
}
