package natscluster

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// Proxy forwards loopback TCP to each node of a cluster, one listener per
// node, so a gateway joining through it can be cut off the cluster (every
// connection dropped, new ones refused) and healed, while other gateways
// keep their links.
type Proxy struct {
	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	lns   []net.Listener
	wg    sync.WaitGroup
}

// NewProxy proxies each nats:// URL of urls (comma-separated) and stops
// when the test ends.
func NewProxy(tb testing.TB, urls string) *Proxy {
	tb.Helper()
	p := &Proxy{conns: map[net.Conn]struct{}{}}
	for _, u := range strings.Split(urls, ",") {
		target := strings.TrimPrefix(strings.TrimSpace(u), "nats://")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.close()
			tb.Fatal(err)
		}
		p.lns = append(p.lns, ln)
		p.wg.Go(func() { p.accept(ln, target) })
	}
	tb.Cleanup(p.close)
	return p
}

// URLs lists the proxied URLs, in the order of the cluster's.
func (p *Proxy) URLs() string {
	us := make([]string, len(p.lns))
	for i, ln := range p.lns {
		us[i] = "nats://" + ln.Addr().String()
	}
	return strings.Join(us, ",")
}

// Cut drops every proxied connection and refuses new ones until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal accepts connections again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *Proxy) accept(ln net.Listener, target string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			continue
		}
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// track registers both ends, or closes them when a Cut came in between.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	wg.Go(func() { cp(a, b) })
	cp(b, a)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, a)
	delete(p.conns, b)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.mu.Lock()
	for _, ln := range p.lns {
		ln.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
