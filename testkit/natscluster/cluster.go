package natscluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options shape a cluster.
type Options struct {
	// Nodes is how many servers; zero is 3.
	Nodes int
	// Config, when set, returns extra configuration text for node i
	// (authorization, accounts), appended to what Start writes.
	Config func(i int) string
	// Name is the cluster's name; empty is "gateway-test".
	Name string
}

// Cluster is a running set of nats-server processes routed to each other.
type Cluster struct {
	tb    testing.TB
	bin   string
	dir   string
	nodes []*node
}

type node struct {
	name            string
	port, mon, clus int
	conf            string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs *lockedBuf
}

// lockedBuf is a node's output, written by exec's copier while a test
// may read it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// readyWithin bounds how long a node (and the JetStream meta group) may
// take to come up.
const readyWithin = 30 * time.Second

// Start starts the cluster and waits until every node is healthy with
// JetStream current. Everything is stopped (SIGKILL) when the test ends;
// a failed test gets each node's log.
func Start(tb testing.TB, o Options) *Cluster {
	tb.Helper()
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.Name == "" {
		o.Name = "gateway-test"
	}
	c := &Cluster{tb: tb, bin: Bin(tb), dir: tb.TempDir()}
	ports := freePorts(tb, 3*o.Nodes)
	var routes []string
	for i := range o.Nodes {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3*i+2]))
	}
	for i := range o.Nodes {
		n := &node{name: fmt.Sprintf("n%d", i), port: ports[3*i], mon: ports[3*i+1], clus: ports[3*i+2]}
		extra := ""
		if o.Config != nil {
			extra = o.Config(i)
		}
		n.conf = filepath.Join(c.dir, n.name+".conf")
		clus := ""
		if o.Nodes > 1 {
			// Clients are told of no other node: a gateway joining
			// through a Proxy must not find its way around it.
			clus = fmt.Sprintf("cluster {\n  name: %s\n  listen: \"127.0.0.1:%d\"\n  routes: [%s]\n  no_advertise: true\n}\n",
				o.Name, n.clus, strings.Join(routes, ", "))
		}
		text := fmt.Sprintf("server_name: %s\nlisten: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\njetstream { store_dir: %q }\n%s%s\n",
			n.name, n.port, n.mon, filepath.Join(c.dir, n.name), clus, extra)
		if err := os.WriteFile(n.conf, []byte(text), 0o600); err != nil {
			tb.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	tb.Cleanup(c.stop)
	for i := range c.nodes {
		c.start(i)
	}
	for i := range c.nodes {
		c.WaitHealthy(i)
	}
	return c
}

func (c *Cluster) start(i int) {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	cmd := exec.Command(c.bin, "-c", n.conf)
	n.logs = &lockedBuf{}
	cmd.Stdout, cmd.Stderr = n.logs, n.logs
	// A test process that dies must not leave servers behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.tb.Fatalf("natscluster: start %s: %v", n.name, err)
	}
	n.cmd, n.done = cmd, make(chan struct{})
	done := n.done
	go func() { _ = cmd.Wait(); close(done) }()
}

// WaitHealthy waits until node i answers its health check with JetStream
// current, or fails the test.
func (c *Cluster) WaitHealthy(i int) {
	c.tb.Helper()
	n := c.nodes[i]
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(readyWithin)
	for {
		err := c.healthy(client, n)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("natscluster: %s not healthy within %s: %v\n%s", n.name, readyWithin, err, c.log(i))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// healthy is nil once n answers its health check and, in a cluster, knows
// the JetStream meta leader with every peer current: before that, creating
// a replicated stream can go unanswered.
func (c *Cluster) healthy(client *http.Client, n *node) error {
	base := fmt.Sprintf("http://127.0.0.1:%d", n.mon)
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s", resp.Status)
	}
	if len(c.nodes) == 1 {
		return nil
	}
	resp, err = client.Get(base + "/jsz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var jsz struct {
		Meta *struct {
			Leader   string `json:"leader"`
			Replicas []struct {
				Current bool `json:"current"`
				Offline bool `json:"offline"`
			} `json:"replicas"`
		} `json:"meta_cluster"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&jsz); err != nil {
		return fmt.Errorf("jsz: %w", err)
	}
	if jsz.Meta == nil || jsz.Meta.Leader == "" {
		return errors.New("no meta leader yet")
	}
	if n.name == jsz.Meta.Leader {
		if len(jsz.Meta.Replicas) < len(c.nodes)-1 {
			return fmt.Errorf("meta leader sees %d of %d peers", len(jsz.Meta.Replicas), len(c.nodes)-1)
		}
		for _, r := range jsz.Meta.Replicas {
			if !r.Current || r.Offline {
				return errors.New("a meta peer is not current")
			}
		}
	}
	return nil
}

// URL is node i's client URL.
func (c *Cluster) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.nodes[i].port) }

// URLs lists every node's client URL, comma-separated, node 0 first.
func (c *Cluster) URLs() string {
	us := make([]string, len(c.nodes))
	for i := range c.nodes {
		us[i] = c.URL(i)
	}
	return strings.Join(us, ",")
}

// Name is node i's server name (n0, n1, ...), as JetStream reports
// leaders and replicas.
func (c *Cluster) Name(i int) string { return c.nodes[i].name }

// Index is the node with server name name, or -1.
func (c *Cluster) Index(name string) int {
	for i, n := range c.nodes {
		if n.name == name {
			return i
		}
	}
	return -1
}

// Kill stops node i with SIGKILL and waits for it to exit.
func (c *Cluster) Kill(i int) {
	n := c.nodes[i]
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart starts node i again on its ports and store (after Kill) and
// waits until it is healthy.
func (c *Cluster) Restart(i int) {
	c.tb.Helper()
	c.Kill(i)
	c.start(i)
	c.WaitHealthy(i)
}

// Running reports whether node i's process is alive.
func (c *Cluster) Running(i int) bool {
	n := c.nodes[i]
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func (c *Cluster) log(i int) string {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.logs == nil {
		return ""
	}
	return n.logs.String()
}

func (c *Cluster) stop() {
	for i := range c.nodes {
		c.Kill(i)
	}
	if c.tb.Failed() {
		for i, n := range c.nodes {
			c.tb.Logf("natscluster: %s log:\n%s", n.name, tail(c.log(i), 4000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// freePorts returns n loopback ports free at the time of asking.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
