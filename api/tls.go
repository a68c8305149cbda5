package api

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/netutil"
)

// CertReloader serves a certificate from files and picks up new ones
// without a restart: each handshake compares the files' modification
// times with those last loaded, and Reload (for SIGHUP) loads at once. A
// pair that does not load (a renewal caught half-written) leaves the old
// certificate serving; the next change is tried again.
type CertReloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	tried   [2]time.Time // mtimes of the last attempt, good or bad
	lastErr error
}

// NewCertReloader loads the pair once; a pair that does not load now is an
// error, so a typo stops the gateway at start.
func NewCertReloader(certFile, keyFile string) (*CertReloader, error) {
	c := &CertReloader{certFile: certFile, keyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload loads the pair now. On error the previous certificate stays.
func (c *CertReloader) Reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.mtimes()
	if err != nil {
		return err
	}
	return c.load(m)
}

func (c *CertReloader) mtimes() ([2]time.Time, error) {
	var m [2]time.Time
	for i, p := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(p)
		if err != nil {
			return m, fmt.Errorf("tls: %w", err)
		}
		m[i] = fi.ModTime()
	}
	return m, nil
}

func (c *CertReloader) load(m [2]time.Time) error {
	c.tried = m
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		c.lastErr = fmt.Errorf("tls: loading %s and %s: %w", c.certFile, c.keyFile, err)
		return c.lastErr
	}
	c.cert, c.lastErr = &cert, nil
	return nil
}

// GetCertificate is tls.Config.GetCertificate.
func (c *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, err := c.mtimes(); err == nil && m != c.tried {
		_ = c.load(m) // a failure keeps the old certificate; Err reports it
	}
	if c.cert == nil {
		return nil, c.lastErr
	}
	return c.cert, nil
}

// Err is why the last load failed, or nil.
func (c *CertReloader) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// TLSConfig is TLS 1.2 or later, with the reloading certificate.
func (c *CertReloader) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.GetCertificate}
}

// Listen opens the TCP listener on addr (--api), with the server's TLS when
// it has a certificate.
func (s *Server) Listen(addr string) (net.Listener, error) {
	ln, err := ListenTCP(addr)
	if err != nil {
		return nil, err
	}
	return s.WithTLS(ln), nil
}

// MaxConns caps the TCP listener's open connections (each an open file):
// past it, new ones wait in the kernel's backlog until one closes. Idle
// ones close after IdleTimeout, silent ones after ReadHeaderTimeout.
const MaxConns = 1024

// ListenTCP binds addr (--api) before anything else starts, so a port
// already taken stops the gateway before it registers anywhere; it says
// so in words. An empty addr binds nothing. At most MaxConns connections
// are open at once.
func ListenTCP(addr string) (net.Listener, error) {
	return listenTCP(addr, MaxConns)
}

func listenTCP(addr string, maxConns int) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		hint := addr
		if _, perr := strconv.Atoi(addr); perr == nil {
			hint = "127.0.0.1:" + addr // a bare port: this machine only
		}
		return nil, fmt.Errorf("--api %s: want HOST:PORT, such as %s (0.0.0.0:PORT to listen beyond this machine)", addr, hint)
	}
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("--api %s: the port is already in use (another gateway, or another program); pick another with --api", addr)
	case err != nil:
		return nil, fmt.Errorf("--api %s: %w", addr, err)
	}
	return netutil.LimitListener(ln, maxConns), nil
}

// WithTLS wraps ln (from ListenTCP) in the server's TLS when it has a
// certificate.
func (s *Server) WithTLS(ln net.Listener) net.Listener {
	if tc := s.TLSConfig(); tc != nil {
		return tls.NewListener(ln, tc)
	}
	return ln
}
