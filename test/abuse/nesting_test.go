package abuse

import (
	"bytes"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// TestDeepNestingBeforeAuthCostsLittle sends, on unauthenticated
// connections to both local legs, a line just under the 1 MiB cap that is an
// object opening a million arrays. Before the nesting cap each cost the
// gateway about 58 MB of heap while the duplicate-key check walked it (32 on
// the Claude socket: 1.87 GB resident); now it is refused by a scan that
// allocates nothing (Claude Code's socket) or by its length before any parse
// (Qwen Code's auth line), and peak resident memory grows by less than
// maxGrowth for all of them together: what is left is the line buffers.
func TestDeepNestingBeforeAuthCostsLittle(t *testing.T) {
	const (
		perSocket = 8
		maxGrowth = 96 << 20 // before the cap: about 58 MB per connection, 900 MB here
	)
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "nest")
	socks := []string{claudeSocket(t, g), qwenSocket(t, g)}
	line := append([]byte(`{"a":`), bytes.Repeat([]byte("["), 1<<20-16)...)
	line = append(line, '\n')
	before := PeakRSS(t, g.PID)

	var wg sync.WaitGroup
	for _, sock := range socks {
		for range perSocket {
			c := dialUnix(t, sock)
			wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				if _, err := c.Write(line); err != nil {
					return // closed by the gateway mid-line: also a refusal
				}
				_ = c.CloseWrite()
				_, _ = io.Copy(io.Discard, c) // until the gateway is done with it
			})
		}
	}
	wg.Wait()
	grew := PeakRSS(t, g.PID) - before
	t.Logf("%d deep lines on each leg: peak RSS grew %s", perSocket, MiB(grew))
	if grew > maxGrowth {
		t.Fatalf("peak RSS grew %s for %d deep lines, want under %s", MiB(grew), 2*perSocket, MiB(maxGrowth))
	}
}
