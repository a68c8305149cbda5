package federation

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

// cluster is a real three-node NATS cluster with JetStream, in this
// process, on loopback ports.
type cluster struct {
	servers []*server.Server
}

func (c *cluster) url(i int) string { return c.servers[i].ClientURL() }

// urls lists every node, the one given first.
func (c *cluster) urls(first int) string {
	us := []string{c.url(first)}
	for i := range c.servers {
		if i != first {
			us = append(us, c.url(i))
		}
	}
	return strings.Join(us, ",")
}

func (c *cluster) shutdown() {
	for _, s := range c.servers {
		s.Shutdown()
	}
	for _, s := range c.servers {
		s.WaitForShutdown()
	}
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startCluster starts three nodes routed to each other, each storing
// under dir, and waits for JetStream's meta leader.
func startCluster(dir string) (*cluster, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	c := &cluster{}
	for i, p := range ports {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   filepath.Join(dir, fmt.Sprintf("n%d", i)),
			NoLog:      true,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "fedtest", Host: "127.0.0.1", Port: p, NoAdvertise: true}, // a client cut off through a proxy must not find the nodes itself
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
		})
		if err != nil {
			c.shutdown()
			return nil, err
		}
		s.Start()
		c.servers = append(c.servers, s)
	}
	for _, s := range c.servers {
		if !s.ReadyForConnections(10 * time.Second) {
			c.shutdown()
			return nil, fmt.Errorf("%s did not start", s.Name())
		}
	}
	if !testutil.Within(20*time.Second, func() bool {
		leader := false
		for _, s := range c.servers {
			leader = leader || s.JetStreamIsLeader()
			if !s.JetStreamIsCurrent() {
				return false
			}
		}
		return leader
	}) {
		c.shutdown()
		return nil, fmt.Errorf("no jetstream meta leader")
	}
	return c, nil
}

// shared is the cluster most tests use; each test claims host names of
// its own, so they do not see each other's messages.
var (
	sharedOnce sync.Once
	sharedC    *cluster
	sharedErr  error
	sharedDir  string
)

func sharedCluster(t *testing.T) *cluster {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "fedtest")
		if sharedErr == nil {
			sharedC, sharedErr = startCluster(sharedDir)
		}
	})
	if sharedErr != nil {
		t.Fatalf("cluster: %v", sharedErr)
	}
	return sharedC
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedC != nil {
		sharedC.shutdown()
	}
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

// testTTL is the roster TTL every test uses: the buckets are shared, and
// their TTL is whatever the last gateway to open them said.
const testTTL = 3 * time.Second

func join(t *testing.T, urls, host string, mods ...func(*Config)) *Node {
	t.Helper()
	cfg := Config{URLs: urls, Host: host, RosterTTL: testTTL, AckWait: 2 * time.Second, Log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, m := range mods {
		m(&cfg)
	}
	// Past the gateway's own 30 s: a cluster a test just started may still
	// be electing its leaders on a loaded machine, and a join that fails
	// then says so itself.
	n, err := Connect(testutil.Context(t, 40*time.Second), cfg)
	if err != nil {
		t.Fatalf("connect %s: %v", host, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// crash stops n as a killed gateway stops: no lease or roster entry is
// deleted, nothing drains.
func crash(n *Node) {
	n.cancel()
	n.done.Wait()
	n.nc.Close()
	n.closeStore() // a killed process's file lock goes with it
}

// peer is one host's local side: fixed sessions, and a Deliver that
// records what arrived.
type peer struct {
	sessions []message.Session
	mu       sync.Mutex
	got      []message.Message
	status   message.Status
}

func (p *peer) local() Local {
	return Local{
		Sessions: func(context.Context) ([]message.Session, error) { return p.sessions, nil },
		Deliver: func(_ context.Context, m message.Message) (message.Receipt, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.got = append(p.got, m)
			st := p.status
			if st == 0 {
				st = message.StatusDelivered
			}
			return message.Receipt{MsgID: m.ID, Status: st}, nil
		},
	}
}

func (p *peer) received() []message.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]message.Message(nil), p.got...)
}

// take returns what arrived since the last take.
func (p *peer) take() []message.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := p.got
	p.got = nil
	return got
}

func serve(t *testing.T, n *Node, p *peer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := n.Serve(ctx, p.local()); err != nil {
			t.Errorf("serve %s: %v", n.Host(), err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// run starts n's leg and returns the receipts it reports.
func run(t *testing.T, n *Node) <-chan message.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan message.Event, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := n.Leg().Run(ctx, in); err != nil {
			t.Errorf("run %s: %v", n.Host(), err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return in
}

func session(name, id string, p message.Protocol) message.Session {
	return message.Session{Address: "uds:/run/" + id + ".sock", Protocol: p, Name: name, SessionID: id, PID: 42, Kind: "interactive", Reachable: true}
}

// testWriter sends a node's log to the test's.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
