package federation

// Temporary stand-ins for the shared harness (testkit/natscluster and
// hosts_test.go); removed once they land.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
	"github.com/sessiongateway/gateway/testkit/fakeclaude"
	"github.com/sessiongateway/gateway/testkit/fakeqwen"
	"github.com/sessiongateway/gateway/testkit/gatewaytest"
	"github.com/sessiongateway/gateway/transport/uds/qwen"
)

func TestMain(m *testing.M) { os.Exit(gatewaytest.Main(m)) }

func tmpCluster(t testing.TB) string {
	dir := t.TempDir()
	var ports []int
	var ls []net.Listener
	for range 3 {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var srvs []*server.Server
	var urls []string
	for i, p := range ports {
		s, err := server.NewServer(&server.Options{ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: filepath.Join(dir, fmt.Sprint(i)), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "x", Host: "127.0.0.1", Port: p}, Routes: server.RoutesFromStr(strings.Join(routes, ","))})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		srvs = append(srvs, s)
	}
	t.Cleanup(func() {
		for _, s := range srvs {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	for _, s := range srvs {
		s.ReadyForConnections(10 * time.Second)
		urls = append(urls, s.ClientURL())
	}
	testutil.Eventually(t, "meta leader", func() bool {
		l := false
		for _, s := range srvs {
			l = l || s.JetStreamIsLeader()
			if !s.JetStreamIsCurrent() {
				return false
			}
		}
		return l
	})
	return strings.Join(urls, ",")
}

type tmpHost struct {
	host string
	*gatewaytest.Gateway
}

func tmpStartHost(t testing.TB, urls, host string) *tmpHost {
	w := gatewaytest.NewWorld(t)
	g := gatewaytest.Start(t, w, "gw-"+host, "--federation", urls, "--host", host)
	return &tmpHost{host: host, Gateway: g}
}

func (h *tmpHost) claude(t *testing.T, name string) *fakeclaude.Peer {
	return fakeclaude.Start(t, fakeclaude.Config{Name: name, ConfigDir: h.ConfigDir, RuntimeDir: h.Runtime, Mode: message.ModePrompting})
}

func (h *tmpHost) qwen(t *testing.T, name string, p qwen.Policy) *fakeqwen.Peer {
	return fakeqwen.Start(t, fakeqwen.Config{Name: name, Home: h.QwenHome, RuntimeDir: h.Runtime, Mode: message.ModePrompting, Inbound: p})
}
