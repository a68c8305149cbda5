package federation

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg"
	"github.com/sessiongateway/gateway/message"
)

// Flags are serve's federation flags; each also reads its GATEWAY_*
// variable through the configuration layer (--federation-creds is
// GATEWAY_FEDERATION_CREDS).
type Flags struct {
	urls, host, listen, creds, nkey, ca, cert, key *string
	publish                                        []string
	hostKey, trust, serverConf                     *string
	noAuth                                         *bool
	laneWindow                                     *int
}

// RegisterFlags adds the federation flags to fs.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{
		urls:   fs.String("federation", "", "join other gateways over NATS JetStream: nats://HOST:PORT[,nats://...], or embedded to run a NATS server in this gateway"),
		host:   fs.String("host", "", "this gateway's name in the federation: a-z 0-9 - (default: the hostname, sanitised)"),
		listen: fs.String("federation-listen", DefaultListen, "with --federation embedded: the address other gateways join as nats://ADDR"),
		creds:  fs.String("federation-creds", "", "a NATS .creds file (JWT and nkey seed)"),
		nkey:   fs.String("federation-nkey", "", "a NATS nkey seed file"),
		ca:     fs.String("federation-tls-ca", "", "CA certificate the NATS servers' certificates are checked against"),
		cert:   fs.String("federation-tls-cert", "", "client certificate for NATS"),
		key:    fs.String("federation-tls-key", "", "client certificate key for NATS"),

		hostKey:    fs.String("federation-key", "", "this host's signing key, written by gateway federation keygen (default: <state-dir>/federation/host.key, created on first start)"),
		trust:      fs.String("federation-trust", "", "pinned host keys, a line HOST ed25519:KEY each (default: each host's key is pinned on first use into <state-dir>/federation/known-hosts)"),
		serverConf: fs.String("federation-server-config", "", "with --federation embedded: a nats-server configuration file for its authorization, accounts and TLS"),
		noAuth:     fs.Bool("federation-no-auth", false, "with --federation embedded: let it listen beyond loopback without authentication"),
	}
	f.laneWindow = fs.Int("federation-lane-window", DefaultLaneWindow, "messages of one sender handed to an order-keeping local writer (an alias worker) before the first is answered: more is faster, and a crash of this gateway may then deliver up to that many twice to a Claude Code session")
	fs.Func("federation-publish", "show other hosts only the local sessions whose name matches this `GLOB` (repeatable; default all)",
		func(s string) error { f.publish = append(f.publish, s); return nil })
	return f
}

// Enabled reports whether --federation was given: a gateway may then
// serve no local leg at all, reaching only other hosts' sessions.
func (f *Flags) Enabled() bool { return f != nil && *f.urls != "" }

// Check validates the flags without connecting.
func (f *Flags) Check(stateDir string) error {
	if *f.urls == "" {
		return nil
	}
	if _, err := f.config(stateDir, nil).withDefaults(); err != nil {
		return err
	}
	if *f.trust != "" { // a broken trust file is said at once, with its line
		if _, _, err := readTrust(*f.trust); err != nil {
			return err
		}
	}
	return nil
}

func (f *Flags) config(stateDir string, log *slog.Logger) Config {
	return Config{
		URLs: *f.urls, Host: *f.host, Listen: *f.listen, StateDir: stateDir, Log: log,
		CredsFile: *f.creds, NKeyFile: *f.nkey, TLSCA: *f.ca, TLSCert: *f.cert, TLSKey: *f.key,
		Instance: instanceID(stateDir), Publish: f.publish,
		KeyFile: *f.hostKey, TrustFile: *f.trust, ServerConfig: *f.serverConf, NoAuth: *f.noAuth,
		LaneWindow: *f.laneWindow,
	}
}

// joinTimeout bounds Join: a cluster without a quorum answers 503 for as
// long as it lasts, and serve should say so rather than wait.
const joinTimeout = 30 * time.Second

// Join connects as the flags say; it returns nil and no error when
// --federation is not given.
func (f *Flags) Join(ctx context.Context, stateDir string, log *slog.Logger) (*Node, error) {
	if f == nil || *f.urls == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	n, err := Connect(ctx, f.config(stateDir, log))
	if err != nil {
		return nil, err
	}
	log.Info("federation joined", "host", n.Host(), "public_key", n.PublicKey(), "embedded", n.ClientURL())
	return n, nil
}

// instanceID is this state directory's stable instance id, so a gateway
// restarted on it (even after kill -9) takes its own host lease over at
// once. It is written on first use; a failure falls back to a random one.
func instanceID(stateDir string) string {
	if stateDir == "" {
		return ""
	}
	p := filepath.Join(stateDir, "federation-instance")
	if b, err := safefile.ReadCapped(p, 256); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	id := randomID()
	if err := safefile.WriteAtomic(p, []byte(id+"\n")); err != nil {
		return ""
	}
	return id
}

// Router is this host's router as the node uses it: ServeRouter serves
// its sessions and delivers through it (Forward, the bridge's road),
// publishes its own legs' prompts whenever they change and applies other
// hosts' answers to them. A leg sits below the router, so this is the
// node's word for it; *router.Router is one.
type Router interface {
	Sessions(ctx context.Context) []message.Session
	Forward(ctx context.Context, source leg.Leg, m message.Message) message.Receipt
	Ready() map[message.Protocol]error
	Permissions() []message.PermissionRequest
	SettledPermissions() []message.PermissionRequest
	Permission(id string) (message.PermissionRequest, error)
	AnswerPermission(ctx context.Context, id string, a message.PermissionAnswer) (message.PermissionRequest, error)
	// PermissionsChanged is closed at the next change of the prompts.
	PermissionsChanged() <-chan struct{}
}

// ServeRouter runs Serve with the router's sessions as this host's, until
// ctx ends. A message from another host takes the bridge's road
// (Router.Forward), so its first receipt says when the local leg wrote
// it. Serve starts once the local legs are ready (or after legWait), so a
// message offered again after a restart finds its session listed. It
// publishes the router's permission prompts to the other hosts and
// answers theirs for them through it.
func (n *Node) ServeRouter(ctx context.Context, r Router) error {
	n.pr.mu.Lock()
	n.pr.router = r
	n.pr.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer n.pr.bg.Wait()
	wg.Go(func() { n.publishPrompts(ctx, r) })
	deadline := n.now().Add(legWait)
	for !localReady(r) && n.now().Before(deadline) {
		if clock.Sleep(ctx, n.cfg.Clock, 100*time.Millisecond) != nil {
			return nil
		}
	}
	return n.Serve(ctx, Local{
		Sessions: func(ctx context.Context) ([]message.Session, error) { return r.Sessions(ctx), nil },
		Deliver: func(ctx context.Context, m message.Message) (message.Receipt, error) {
			m.AliasOf, m.Protocol = m.To, message.ProtocolFederation
			rc := r.Forward(ctx, n.leg, m)
			if rc.Status == 0 {
				return rc, errors.New("federation: the router took nothing")
			}
			return rc, nil
		},
	})
}

// legWait bounds ServeRouter's wait for the local legs.
const legWait = 10 * time.Second

func localReady(r Router) bool {
	for p, err := range r.Ready() {
		if p != message.ProtocolFederation && err != nil {
			return false
		}
	}
	return true
}
