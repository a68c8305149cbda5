package federation

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// ErrOpenListen is an embedded server asked to listen beyond loopback
// with nothing to authenticate the gateways that join it.
var ErrOpenListen = errors.New("the embedded NATS server would listen beyond loopback without authentication: give --federation-server-config with an authorization block (see docs/federation), or --federation-no-auth to accept anyone who reaches the port")

// maxServerConfig caps the embedded server's configuration file.
const maxServerConfig = 1 << 20

// startEmbedded runs a one-node NATS server with JetStream in this
// process, for a small team that runs no NATS yet. Other gateways join it
// as nats://LISTEN. Its authorization (users, nkeys, accounts, TLS) comes
// from cfg.ServerConfig, a nats-server configuration file; the gateway
// sets its listen address, name, JetStream store and payload cap.
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
	opts := &server.Options{}
	if cfg.ServerConfig != "" {
		// Only its owner may write it: it decides who joins.
		if _, err := safefile.ReadOwnerWritable(cfg.ServerConfig, maxServerConfig); err != nil {
			return nil, fmt.Errorf("federation: embedded server configuration: %w", err)
		}
		if opts, err = server.ProcessConfigFile(cfg.ServerConfig); err != nil {
			return nil, fmt.Errorf("federation: embedded server configuration %s: %w", cfg.ServerConfig, err)
		}
	}
	if opts.ServerName == "" {
		opts.ServerName = "gateway-" + cfg.Host
	}
	opts.Host, opts.Port = host, p
	opts.JetStream, opts.StoreDir = true, filepath.Join(cfg.StateDir, "federation")
	opts.NoSigs, opts.NoLog = true, true
	opts.MaxPayload = MaxEnvelope + 64<<10
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && !authenticates(opts) {
		if !cfg.NoAuth {
			return nil, fmt.Errorf("federation: %w", ErrOpenListen)
		}
		cfg.Log.Warn("the embedded NATS server listens beyond loopback without authentication (--federation-no-auth); anyone who reaches it can join the federation", "listen", cfg.Listen)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("federation: embedded server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("federation: the embedded server did not start listening on %s", cfg.Listen)
	}
	return s, nil
}

// authenticates reports whether a server with opts asks every client who
// it is: users, nkeys, a token, operator JWTs, an auth callout or client
// certificates, and no user that clients without credentials become.
func authenticates(o *server.Options) bool {
	if o.NoAuthUser != "" {
		return false
	}
	return len(o.Users) > 0 || len(o.Nkeys) > 0 || o.Username != "" || o.Authorization != "" ||
		len(o.TrustedOperators) > 0 || len(o.TrustedKeys) > 0 || o.AuthCallout != nil || o.TLSVerify
}
