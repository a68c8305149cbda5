package container

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/pairtest"
)

// natsLine is node's run line on the host's network: the compose command
// as it is, but bound to the node's own loopback address (on compose's
// network each node has its own address; here they share the host's).
func natsLine(t *testing.T, f composeFile, project, node string) []string {
	t.Helper()
	ip := loopbackHosts[node]
	line := runLine(t, f, project, node)
	i := slices.Index(line, "nats://0.0.0.0:6222")
	if i < 0 {
		t.Fatalf("%s's command has no cluster listener on 0.0.0.0:6222: %v", node, line)
	}
	line[i] = "nats://" + ip + ":6222"
	return append(line, "--addr", ip)
}

// federatedLine is gateway's run line (gateway-a or gateway-b) beside
// World w's sessions: the federation service as compose has it, plus what
// the local profile adds to reach a host's sessions (its user, the host's
// pid namespace, the session directories, /etc/machine-id and the state
// directory in place of the named volume), and the local legs on.
func federatedLine(t *testing.T, project, gateway string, w *gatewaytest.World) []string {
	t.Helper()
	f := loadCompose(t, localVars(t, w))
	local := runLine(t, f, project, "local")
	var extra []string
	for i := 0; i < len(local)-1; i++ {
		switch local[i] {
		case "--user", "--pid", "--mount":
			extra = append(extra, local[i], local[i+1])
			i++
		case "--env":
			if !strings.HasPrefix(local[i+1], "GATEWAY_") {
				extra = append(extra, local[i], local[i+1])
			}
			i++
		}
	}
	line := runLine(t, f, project, gateway, extra...)
	for i := 0; i < len(line)-1; i++ {
		if line[i] == "--volume" && strings.HasSuffix(line[i+1], ":/var/lib/gateway") {
			line = slices.Delete(line, i, i+2)
			break
		}
	}
	return append(line, "--legs", "claude,qwen")
}

// The federation profile: a three-node NATS cluster from the image built
// FROM scratch with the pinned nats-server, two gateways joined to it; a
// Claude session beside gateway a reaches a Qwen session beside gateway b.
func TestTheFederationProfileCarriesAMessageBetweenTwoGateways(t *testing.T) {
	needPodman(t)
	project := uniqueName(t, "fed")
	f := loadCompose(t, nil)
	var vols []string
	t.Cleanup(func() {
		for _, v := range vols {
			if _, err := podmanErr("volume", "rm", "--force", v); err != nil {
				t.Logf("removing volume %s: %v", v, err)
			}
		}
	})
	for _, node := range []string{"nats-1", "nats-2", "nats-3"} {
		vols = append(vols, project+"_"+node)
		start(t, project+"_"+node, natsLine(t, f, project, node)...)
	}
	testutil.EventuallyWithin(t, 60*time.Second, "every node's JetStream is up", func() bool {
		for _, ip := range loopbackHosts {
			resp, err := http.Get("http://" + ip + ":8222/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false
			}
		}
		return true
	})

	wa, wb := gatewaytest.NewWorld(t), gatewaytest.NewWorld(t)
	ga := start(t, project+"_gateway-a", federatedLine(t, project, "gateway-a", wa)...)
	gb := start(t, project+"_gateway-b", federatedLine(t, project, "gateway-b", wb)...)
	ga.healthy(t)
	gb.healthy(t)

	pair := pairtest.StartPair(t, wa, "alice", wb, "sink")
	ctx := testutil.Context(t, 120*time.Second)

	t.Run("a Claude session beside a reaches a Qwen session beside b through its alias sink.b", func(t *testing.T) {
		if m := pair.Cross(ctx, t, "sink.b", "hello from a", 60*time.Second); m.FromName != "alice.a" {
			t.Errorf("it came from %q, want alice.a", m.FromName)
		}
	})
	t.Run("both gateways stop cleanly", func(t *testing.T) {
		for _, g := range []*container{ga, gb} {
			if took, code := g.stop(t); code != "0" {
				t.Errorf("%s: exit code %s after podman stop (%v), want 0", g.name, code, took)
			}
		}
	})
}
