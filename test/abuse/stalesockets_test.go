package abuse

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// TestKilledRunsLeaveNoSockets kills the gateway with SIGKILL three times
// and starts it a fourth: the legs' sockets are named for the pid, so every
// killed run once left its two behind (six here). Now a start sweeps the
// ones the runs before it bound, and only the live run's two remain.
func TestKilledRunsLeaveNoSockets(t *testing.T) {
	w := gatewaytest.NewWorld(t)
	for range 3 {
		g := gatewaytest.Start(t, w, "stale")
		claudeSocket(t, g)
		qwenSocket(t, g)
		g.Kill(t)
	}
	g := gatewaytest.Start(t, w, "stale")
	live := map[string]bool{claudeSocket(t, g): true, qwenSocket(t, g): true}
	var stale []string
	for _, dir := range []string{"cc-socks", "qwen-socks"} {
		ents, err := os.ReadDir(filepath.Join(w.Runtime, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if p := filepath.Join(w.Runtime, dir, e.Name()); e.Type() == os.ModeSocket && !live[p] {
				stale = append(stale, p)
			}
		}
	}
	t.Logf("after three kills and a start: %d stale socket files", len(stale))
	if len(stale) > 0 {
		t.Fatalf("stale socket files left: %v", stale)
	}
}
