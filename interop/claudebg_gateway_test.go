package interop

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/leg/claudebg"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
)

// The gateway lists the real daemon's background agent in `gateway
// sessions`, sends it a turn by its address, hands the daemon new work
// (`gateway run claude-bg`) and stops an agent (`gateway stop`).
func TestTheGatewayDrivesARealBackgroundAgent(t *testing.T) {
	bin := needInterop(t)
	d := startRealDaemon(t, bin)
	w := gatewaytest.NewWorld(t)
	cmd := exec.Command(gatewaytest.Bin(t), "serve", "--name", "gw-bg", "--log-level", "debug", "--legs", "claude")
	cmd.Env = append(w.Env(), "CLAUDE_CONFIG_DIR="+filepath.Join(d.home, ".claude"))
	g := gatewaytest.StartCmd(t, w, "gw-bg", cmd, 60*time.Second)
	addr := claudebg.AddressPrefix + d.short

	var agent message.Session
	deadline := time.Now().Add(30 * time.Second)
	for agent.Address == "" && time.Now().Before(deadline) {
		for _, s := range g.Listed(t) {
			if s.Address == addr {
				agent = s
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if agent.Protocol != message.ProtocolClaudeBG || agent.Cwd != d.cwd {
		t.Fatalf("gateway sessions lists the agent as %+v; logs:\n%s", agent, g.Logs())
	}
	if o, _ := g.SendJSON(t, addr, "and now a second turn", "--wait", "--timeout", "60s"); o.Status != message.StatusDelivered {
		t.Fatalf("a turn to the agent: %v %+v", o.Status, o.Receipts)
	}

	out, _, err := g.Run(t, "run", "claude-bg", "--cwd", d.cwd, "--json", "fresh work for the daemon")
	if err != nil || !strings.Contains(out, claudebg.AddressPrefix) {
		t.Fatalf("gateway run claude-bg: %q, %v", out, err)
	}
	if out, _, err := g.Run(t, "stop", addr); err != nil || !strings.Contains(out, "stopped") {
		t.Fatalf("gateway stop %s: %q, %v", addr, out, err)
	}
}
