// Package debugserver serves net/http/pprof for operators, on a loopback
// address only: profiles show message text, tokens and paths held in
// memory, so they are never offered to the network.
package debugserver

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ErrNotLoopback says the address would be reachable from off the machine.
var ErrNotLoopback = errors.New("the debug address must be on loopback (127.0.0.1, ::1 or localhost)")

// CheckAddr reports whether addr (host:port) names a loopback host.
func CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q: %w", addr, ErrNotLoopback)
	}
	return nil
}

// Listen binds addr after CheckAddr; the bound address is checked again,
// so a name cannot resolve its way off the machine.
func Listen(addr string) (net.Listener, error) {
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("debug address: %w", err)
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%q bound %s: %w", addr, ln.Addr(), ErrNotLoopback)
	}
	return ln, nil
}

// Handler serves the pprof index and profiles under /debug/pprof/.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// NewServer is an http.Server of Handler. It has no write timeout: a CPU
// profile or a trace answers after the seconds it was asked to record.
func NewServer() *http.Server {
	return &http.Server{Handler: Handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
}
