package claude

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const poolParentEnv = "CLAUDE_TEST_POOL_PARENT"

// runPoolParent starts one alias worker that never reads its control pipe
// (sleep), prints its pid and waits to be killed: only the parent-death
// signal can then stop the worker.
func runPoolParent() {
	started := make(chan *exec.Cmd, 1)
	pool := NewAliasPool(PoolConfig{StartTimeout: time.Hour, Command: func(string) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		started <- cmd
		return cmd
	}})
	go func() { _, _ = pool.Get(context.Background(), "deaf") }()
	cmd := <-started
	for cmd.Process == nil {
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println(cmd.Process.Pid)
	select {}
}

// gone reports whether pid has exited (a zombie counts: it runs no more).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

func TestAnAliasWorkerDiesWithItsParentEvenWhenItIgnoresItsControlPipe(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), poolParentEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatalf("the parent printed no worker pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("bad pid line %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if gone(pid) {
		t.Fatal("the worker was not running before its parent died")
	}
	_ = parent.Process.Signal(syscall.SIGKILL)
	_ = parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("worker %d outlived its killed parent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
