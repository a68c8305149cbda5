package testutil

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// CountingListener starts the test binary again as a second process, with
// env ("NAME=value") added to its environment, and returns its pid and the
// byte count of each connection it accepts, in order. The test's TestMain
// must see env and call RunCountingListener in the child. The process ends
// with the test.
func CountingListener(tb testing.TB, env string) (pid int, counts <-chan int64) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	out := make(chan int64, 64)
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tb.Fatalf("the listener process did not start: %q", sc.Text())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sc.Scan() {
			n, _ := strconv.ParseInt(sc.Text(), 10, 64)
			out <- n
		}
	}()
	tb.Cleanup(func() {
		// Closing stdin ends the child; its output ends with it.
		_ = stdin.Close()
		_ = cmd.Wait()
		<-done
	})
	return cmd.Process.Pid, out
}

// RunCountingListener is the child side of CountingListener: it listens on
// the Unix socket at path, says "ready", then prints how many bytes each
// connection brought, one line per connection in the order accepted, until
// its stdin closes. It returns the exit code for the child's TestMain.
func RunCountingListener(path string) int {
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
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		fmt.Println(n)
	}
}
