package abuse

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// claudeSocket is the gateway's Claude Code peer socket, once it is bound.
func claudeSocket(tb testing.TB, g *gatewaytest.Gateway) string {
	return waitSocket(tb, filepath.Join(g.Runtime, "cc-socks", strconv.Itoa(g.PID)+".sock"))
}

// qwenSocket is the gateway's Qwen Code inbox, once it is bound.
func qwenSocket(tb testing.TB, g *gatewaytest.Gateway) string {
	return waitSocket(tb, filepath.Join(g.Runtime, "qwen-socks", strconv.Itoa(g.PID)+".sock"))
}

func waitSocket(tb testing.TB, path string) string {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == os.ModeSocket {
			return path
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no socket at %s", path)
		}
	}
}

// dialUnix connects to a socket, failing the test if it cannot.
func dialUnix(tb testing.TB, path string) *net.UnixConn {
	tb.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		tb.Fatalf("dial %s: %v", path, err)
	}
	return c
}
