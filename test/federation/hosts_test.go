package federation

import (
	"os"
	"testing"

	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/testkit/natscluster"
)

func TestMain(m *testing.M) { os.Exit(gatewaytest.Main(m)) }

// host is one machine of the federation: a gateway binary in its own World.
type host struct {
	Name string // its --host
	URLs string // the NATS URLs it joins
	W    *gatewaytest.World
	G    *gatewaytest.Gateway
	args []string
}

// cluster starts a real three-node NATS cluster for one test.
func cluster(t testing.TB) *natscluster.Cluster {
	t.Helper()
	return natscluster.Start(t, natscluster.Options{Nodes: 3})
}

// startHost runs `gateway serve --federation urls --host name args...` in a
// fresh World (the gateway's --name is "gw-NAME") and waits until it
// answers.
func startHost(t testing.TB, name, urls string, args ...string) *host {
	t.Helper()
	h := &host{Name: name, URLs: urls, W: gatewaytest.NewWorld(t), args: args}
	h.start(t)
	return h
}

func (h *host) start(t testing.TB) {
	t.Helper()
	args := append([]string{"--federation", h.URLs, "--host", h.Name}, h.args...)
	h.G = gatewaytest.Start(t, h.W, "gw-"+h.Name, args...)
}

// kill ends the host's gateway with SIGKILL, as a crash would.
func (h *host) kill(t *testing.T) { t.Helper(); h.G.Kill(t) }

// restart starts the host's gateway again on the same World and state
// directory, with the same arguments (after kill or Stop).
func (h *host) restart(t *testing.T) { t.Helper(); h.start(t) }

// claude starts a fake Claude Code session named name on this host.
func (h *host) claude(t testing.TB, name string, mode message.Mode) *fakeclaude.Peer {
	t.Helper()
	return fakeclaude.Start(t, fakeclaude.Config{Name: name, ConfigDir: h.W.ConfigDir, RuntimeDir: h.W.Runtime, Mode: mode})
}

// qwen starts a fake Qwen Code session on this host; cfg's Name, Mode and
// Inbound are kept, the places are this host's.
func (h *host) qwen(t *testing.T, cfg fakeqwen.Config) *fakeqwen.Peer {
	t.Helper()
	cfg.Home, cfg.RuntimeDir = h.W.QwenHome, h.W.Runtime
	return fakeqwen.Start(t, cfg)
}

// waitListed waits until this host's `gateway sessions` lists name (a
// local session's name, or NAME.HOST for another host's).
func (h *host) waitListed(t *testing.T, name string) message.Session {
	t.Helper()
	return h.G.WaitListed(t, name)
}
