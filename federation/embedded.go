package federation

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startEmbedded runs a one-node NATS server with JetStream in this
// process, for a small team that runs no NATS yet. Other gateways join it
// as nats://LISTEN.
func startEmbedded(cfg Config) (*server.Server, error) {
	if cfg.StateDir == "" {
		return nil, fmt.Errorf("federation: the embedded server needs a state directory")
	}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("federation: listen address %q: %w", cfg.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return nil, fmt.Errorf("federation: listen address %q: bad port", cfg.Listen)
	}
	if p == 0 {
		p = server.RANDOM_PORT
	}
	s, err := server.NewServer(&server.Options{
		ServerName: "gateway-" + cfg.Host,
		Host:       host,
		Port:       p,
		JetStream:  true,
		StoreDir:   filepath.Join(cfg.StateDir, "federation"),
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: MaxEnvelope + 64<<10,
	})
	if err != nil {
		return nil, fmt.Errorf("federation: embedded server: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		// No accounts yet: anyone who reaches the port may join.
		cfg.Log.Warn("the embedded NATS server listens beyond loopback without authentication; anyone who reaches it can join the federation", "listen", cfg.Listen)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("federation: the embedded server did not start listening on %s", cfg.Listen)
	}
	return s, nil
}
