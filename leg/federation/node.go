package federation

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	bolt "go.etcd.io/bbolt"

	"github.com/sessiongateway/gateway/message"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/clock"
)

// Names in NATS every gateway of a federation agrees on.
const (
	streamName    = "GATEWAY_FED"
	rosterBucket  = "gateway_roster"
	leaseBucket   = "gateway_hosts"
	subjectPrefix = "gateway.fed."
)

func inSubject(host string) string      { return subjectPrefix + "in." + host }
func inboxPrefix(host string) string    { return "_INBOX." + host }
func receiptSubject(host string) string { return subjectPrefix + "receipts." + host }

// ErrHostTaken means another gateway holds this host name's lease.
var ErrHostTaken = errors.New("another gateway already claims this host name")

// ErrCredentials means the NATS server refused this gateway's credentials.
var ErrCredentials = errors.New("the NATS server refused this gateway's credentials")

// settledWindow is how many message ids a host remembers the origin of
// (inbound) and the target host of (outbound), for receipts.
const settledWindow = 1 << 16

// Node is this gateway's membership in the federation.
type Node struct {
	cfg      Config
	log      *slog.Logger
	srv      *server.Server // embedded, or nil
	nc       *nats.Conn
	js       jetstream.JetStream
	stream   jetstream.Stream
	roster   jetstream.KeyValue
	leases   jetstream.KeyValue
	leaseRev uint64

	leg       *Leg
	link      link
	meter     meter                           // metrics.go
	signer    *signer                         // this host's key
	keys      *keyring                        // the other hosts' keys
	nonces    nonces                          // envelopes read, to tell a replay
	missing   *bounded.Map[string, time.Time] // hosts found without a roster entry, when
	drops     drops
	db        *bolt.DB                     // the spool's store in the state directory, or nil
	settledDB *bolt.DB                     // the settled ids' store (not synced), or nil
	settled   *settled                     // origin/inbound id -> its outcome
	spool     *spool                       // sends kept while the link is down
	origin    *bounded.Map[string, string] // inbound id -> the host that sent it
	sentTo    *bounded.Map[string, string] // outbound id -> the host it went to
	in        *inflight                    // Serve's unacknowledged messages, while it runs
	pr        promptState                  // permission prompts across hosts (prompts.go)
	upSince   atomic.Int64                 // unix nanoseconds the link is up since; 0 while down
	relink    chan struct{}                // a reconnect: the roster watch starts over
	relays    []chan relayed               // decisive receipts for settleRelayed, by shardOf
	// beforeReceipt, when set (tests), is called as each settled receipt
	// is about to be sent.
	beforeReceipt func(message.Receipt)
	// onInbound, when set (tests), is called as Serve's consumer handles
	// a message, with Serve's context.
	onInbound func(context.Context)
	serving   sync.WaitGroup // Serve, while it runs (added to under mu, while not closed)

	mu        sync.Mutex
	others    map[string]hostEntry // other hosts' roster entries, by host
	mine      []byte               // this host's roster entry as last put
	published []message.Session    // the sessions in it
	shown     bool                 // Serve has listed the local sessions once
	putAt     time.Time            // when it was last put
	mineEntry rosterEntry          // the same, unsigned, to sign again at each put
	ctx       context.Context      // ends at Close
	cancel    context.CancelFunc
	done      sync.WaitGroup
	closed    bool
}

// Connect joins the federation cfg describes: it connects (after starting
// the embedded server when asked), makes sure the stream and buckets exist
// and claims cfg.Host, failing with ErrHostTaken when a live gateway of
// another Instance holds it. The lease is renewed until Close.
func Connect(ctx context.Context, cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, log: cfg.Log.With("leg", "federation", "host", cfg.Host),
		origin: bounded.NewMap[string, string](settledWindow),
		sentTo: bounded.NewMap[string, string](settledWindow),
		others: map[string]hostEntry{}, relink: make(chan struct{}, 1),
		nonces:  newNonces(),
		missing: bounded.NewMap[string, time.Time](1024),
	}
	if err := n.loadKeys(); err != nil {
		return nil, err
	}
	n.leg = &Leg{n: n}
	n.pr.init(cfg.Host)
	if err := n.openStore(); err != nil {
		return nil, err
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	urls := cfg.URLs
	if strings.TrimSpace(urls) == Embedded {
		if n.srv, err = startEmbedded(cfg); err != nil {
			n.cancel()
			n.closeStore()
			return nil, err
		}
		urls = n.srv.ClientURL()
	}
	if err := n.connect(urls); err != nil {
		n.cancel()
		n.shutdownServer()
		n.closeStore()
		return nil, err
	}
	if err := n.setup(ctx); err != nil {
		n.cancel()
		n.nc.Close()
		n.shutdownServer()
		n.closeStore()
		return nil, err
	}
	n.done.Add(3 + relayShards)
	go n.heartbeat()
	go n.watchRoster()
	go n.flush()
	for i := range relayShards {
		n.relays = append(n.relays, make(chan relayed, relayQueue/relayShards))
		go n.settleRelayed(n.relays[i])
	}
	return n, nil
}

func (n *Node) connect(urls string) error {
	opts := []nats.Option{
		nats.Name("gateway " + n.cfg.Host),
		// Replies to this host alone: subject permissions let each host
		// subscribe to its own inbox prefix, so none reads another's.
		nats.CustomInboxPrefix(inboxPrefix(n.cfg.Host)),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.ReconnectBufSize(8 << 20),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			n.upSince.Store(0)
			if err != nil { // nil: our own Close
				n.log.Warn("federation link down", "err", err)
				n.link.down(err, n.now())
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { n.link.retrying(err) }),
		nats.ReconnectHandler(func(c *nats.Conn) {
			n.link.up(n.now())
			n.upSince.Store(n.now().UnixNano())
			n.spool.wake()
			select {
			case n.relink <- struct{}{}:
			default:
			}
			n.log.Info("federation link back", "url", c.ConnectedUrlRedacted())
		}),
		// A permission the server refuses is said here, or nowhere.
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { n.log.Warn("federation NATS error", "err", err) }),
	}
	if n.cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(n.cfg.CredsFile))
	}
	if n.cfg.NKeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(n.cfg.NKeyFile)
		if err != nil {
			return fmt.Errorf("federation: nkey file: %w", err)
		}
		opts = append(opts, o)
	}
	if n.cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(n.cfg.TLSCA))
	}
	if n.cfg.TLSCert != "" || n.cfg.TLSKey != "" {
		opts = append(opts, nats.ClientCert(n.cfg.TLSCert, n.cfg.TLSKey))
	}
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		err = redactedError{err: err, text: redactIn(err.Error(), urls)} // the client quotes a URL it cannot parse
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
			errors.Is(err, nats.ErrAuthRevoked) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
			return fmt.Errorf("federation: %w (check --federation-creds / --federation-nkey): %v", ErrCredentials, err)
		}
		return fmt.Errorf("federation: cannot connect to %s: %w", redactURLs(urls), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("federation: jetstream: %w", err)
	}
	n.nc, n.js = nc, js
	n.link.up(n.now())
	n.upSince.Store(n.now().UnixNano())
	return nil
}

// reconnectDelay backs off exponentially from 250 ms to 5 s, with up to
// half again of jitter, so a cluster that comes back is not stampeded and
// a gateway cut off for a while is back within seconds of the heal.
func reconnectDelay(attempts int) time.Duration {
	d := 250 * time.Millisecond << min(attempts, 5)
	d = min(d, 5*time.Second)
	return d + rand.N(d/2+1)
}

// redactIn hides in text the credentials of every URL in urls.
func redactIn(text, urls string) string {
	for _, u := range strings.Split(urls, ",") {
		i, at := strings.Index(u, "://"), strings.LastIndexByte(u, '@')
		if i >= 0 && at > i+3 {
			text = strings.ReplaceAll(text, u[i+3:at], "***")
		}
	}
	return text
}

// redactedError is err, its text with credentials hidden.
type redactedError struct {
	err  error
	text string
}

func (e redactedError) Error() string { return e.text }
func (e redactedError) Unwrap() error { return e.err }

func redactURLs(urls string) string {
	var out []string
	for _, u := range strings.Split(urls, ",") {
		if at := strings.LastIndexByte(u, '@'); at >= 0 {
			if i := strings.Index(u, "://"); i >= 0 && i < at {
				u = u[:i+3] + "***" + u[at:]
			}
		}
		out = append(out, strings.TrimSpace(u))
	}
	return strings.Join(out, ",")
}

// setup opens the stream and the two buckets, creating those that do not
// exist yet. One that exists is used as it is: a gateway that sees fewer
// nodes, or has another TTL configured, must not reshape what the others
// use. The roster bucket's TTL is the federation's, whatever this
// gateway's configuration says. They are created, never updated: subject
// permissions can then let a gateway create them (the first one to join
// does) without letting it reshape or delete what others use.
func (n *Node) setup(ctx context.Context) error {
	ttl := n.cfg.RosterTTL
	var err error
	n.stream, err = open(ctx, n, func(ctx context.Context) (jetstream.Stream, error) { return n.js.Stream(ctx, streamName) },
		func(ctx context.Context, r int) (jetstream.Stream, error) {
			return n.js.CreateStream(ctx, jetstream.StreamConfig{
				Name:       streamName,
				Subjects:   []string{inSubject("*"), receiptSubject("*")},
				Retention:  jetstream.WorkQueuePolicy,
				Storage:    jetstream.FileStorage,
				Replicas:   r,
				Duplicates: 2 * time.Minute,
				MaxAge:     7 * 24 * time.Hour,
				MaxMsgSize: MaxEnvelope,
			})
		})
	if err != nil {
		return fmt.Errorf("federation: stream %s: %w", streamName, err)
	}
	bucket := func(name string, size int32) (jetstream.KeyValue, error) {
		return open(ctx, n, func(ctx context.Context) (jetstream.KeyValue, error) { return n.js.KeyValue(ctx, name) },
			func(ctx context.Context, r int) (jetstream.KeyValue, error) {
				return n.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
					Bucket: name, TTL: ttl, History: 1, Replicas: r, MaxValueSize: size, Storage: jetstream.FileStorage,
				})
			})
	}
	if n.roster, err = bucket(rosterBucket, MaxEnvelope); err != nil {
		return fmt.Errorf("federation: roster bucket: %w", err)
	}
	if n.leases, err = bucket(leaseBucket, 256); err != nil {
		return fmt.Errorf("federation: host bucket: %w", err)
	}
	if n.pr.kv, err = bucket(promptBucket, MaxEnvelope); err != nil {
		return fmt.Errorf("federation: prompts bucket: %w", err)
	}
	if st, err := n.roster.Status(ctx); err == nil && st.TTL() > 0 {
		n.cfg.RosterTTL = st.TTL()
	}
	if err := n.claim(ctx); err != nil {
		return err
	}
	if err := n.firstEntry(ctx); err != nil {
		return fmt.Errorf("federation: roster entry: %w", err)
	}
	return nil
}

// open returns what get finds, or creates it when it is not there.
func open[T any](ctx context.Context, n *Node, get func(context.Context) (T, error), create func(context.Context, int) (T, error)) (T, error) {
	v, err := retry(ctx, n.cfg.Clock, get)
	if err == nil || !(errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)) {
		return v, err
	}
	v, err = withReplicas(ctx, n.cfg.Clock, n.nc, n.cfg.Replicas, create)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return get(ctx) // another gateway created it first
	}
	return v, err
}

// withReplicas runs create with the configured replica count or, when
// none is, with 3 on a cluster that told us of 3 or more nodes and 1
// otherwise. A cluster still electing its leaders answers 503 for a
// moment: that is retried until ctx ends.
func withReplicas[T any](ctx context.Context, clk clock.Clock, nc *nats.Conn, want int, create func(context.Context, int) (T, error)) (T, error) {
	if want <= 0 {
		want = 1
		if len(nc.Servers()) >= 3 {
			want = 3
		}
	}
	return retry(ctx, clk, func(ctx context.Context) (T, error) { return create(ctx, want) })
}

// attemptTimeout bounds one request of a retry: under the caller's
// deadline a JetStream request waits for all of it, so one reply lost while
// the cluster elects its leaders would spend a whole join.
var attemptTimeout = 5 * time.Second

// retry runs f, each time within attemptTimeout, until it succeeds, fails
// for good, or ctx ends, waiting between tries on clk.
func retry[T any](ctx context.Context, clk clock.Clock, f func(context.Context) (T, error)) (T, error) {
	waits := clock.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second}.New(clk) // no jitter: no herd retries one request of ours
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		v, err := f(actx)
		cancel()
		if err == nil || !transient(err) {
			return v, err
		}
		if clock.Sleep(ctx, clk, waits.NextBackOff()) != nil {
			return v, err
		}
	}
}

// transient reports whether a JetStream API error is worth retrying.
func transient(err error) bool {
	var api *jetstream.APIError
	// 503: not enough of the cluster answers yet; 10005: no peers to
	// place the replicas on (a node down or not yet known).
	if errors.As(err, &api) && (api.Code == 503 || api.ErrorCode == 10005) {
		return true
	}
	// A request that timed out (the API's own timeout, not the caller's
	// context: retry checks that) is a leader election under way.
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errNoLeader) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, errLeaseMoved)
}

// claim takes cfg.Host's lease: a create-only key that lapses RosterTTL
// after the last renewal, so a gateway that died frees its name. Retried,
// as a whole: a cluster that just started may not answer for its stream
// yet, and a lease of our own read for a takeover may change (or lapse)
// before the update that takes it over.
func (n *Node) claim(ctx context.Context) error {
	rev, err := retry(ctx, n.cfg.Clock, func(ctx context.Context) (uint64, error) {
		rev, err := n.leases.Create(ctx, n.cfg.Host, []byte(n.cfg.Instance))
		if errors.Is(err, jetstream.ErrKeyExists) {
			return n.takeOver(ctx)
		}
		return rev, err
	})
	switch {
	case errors.Is(err, ErrHostTaken):
		return err
	case err != nil:
		return fmt.Errorf("federation: claiming host name %q: %w", n.cfg.Host, err)
	}
	n.leaseRev = rev
	return nil
}

// takeOver renews a lease that is already there if it is ours, from
// before a restart; someone else's is ErrHostTaken. A lease that lapsed or
// changed since it was read is errLeaseMoved: the claim starts again.
func (n *Node) takeOver(ctx context.Context) (uint64, error) {
	e, err := n.leases.Get(ctx, n.cfg.Host)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, errLeaseMoved
	}
	if err != nil {
		return 0, err
	}
	if string(e.Value()) != n.cfg.Instance {
		return 0, fmt.Errorf("federation: host name %q: %w (choose another with --host, or wait %s for its lease to lapse)",
			n.cfg.Host, ErrHostTaken, n.cfg.RosterTTL)
	}
	rev, err := n.leases.Update(ctx, n.cfg.Host, []byte(n.cfg.Instance), e.Revision())
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, errLeaseMoved
	}
	return rev, err
}

// errLeaseMoved: the lease changed between its read and our update.
var errLeaseMoved = errors.New("federation: the lease changed while it was taken over")

// heartbeat renews the lease and re-puts the roster entry every third of
// the TTL until Close.
func (n *Node) heartbeat() {
	defer n.done.Done()
	t := clock.NewTicker(n.cfg.Clock, n.cfg.heartbeat())
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.heartbeat())
		if err := n.renew(ctx); err != nil {
			n.log.Warn("federation lease not renewed", "err", err)
		}
		if err := n.refreshRoster(ctx); err != nil {
			n.log.Warn("federation roster not refreshed", "err", err)
		}
		cancel()
	}
}

func (n *Node) renew(ctx context.Context) error {
	rev, err := n.leases.Update(ctx, n.cfg.Host, []byte(n.cfg.Instance), n.leaseRev)
	if err != nil {
		// Lapsed (a long partition) or renewed by an update we did not
		// see acknowledged: claim it again, which refuses if someone else
		// has it.
		if cerr := n.claim(ctx); cerr != nil {
			return cerr
		}
		return nil
	}
	n.leaseRev = rev
	return nil
}

// Host is this gateway's host name; "" for a nil Node (no federation).
func (n *Node) Host() string {
	if n == nil {
		return ""
	}
	return n.cfg.Host
}

// Dropped counts what was read from NATS and dropped, by reason.
func (n *Node) Dropped() map[Reason]uint64 { return n.drops.snapshot() }

// Close leaves the federation: the lease and roster entry are deleted so
// other hosts forget this one at once, the connection drains and the
// embedded server stops. A nil Node closes as nothing.
func (n *Node) Close() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	n.cancel()
	n.done.Wait()
	n.waitServe()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = n.roster.Delete(ctx, n.cfg.Host)
	_ = n.pr.kv.Delete(ctx, n.cfg.Host)
	_ = n.leases.Delete(ctx, n.cfg.Host, jetstream.LastRevision(n.leaseRev))
	err := n.nc.Drain()
	if err != nil {
		n.nc.Close()
	}
	for !n.nc.IsClosed() && ctx.Err() == nil {
		_ = clock.Sleep(ctx, n.cfg.Clock, 10*time.Millisecond)
	}
	n.shutdownServer()
	n.closeStore()
	return err
}

// waitServe waits for Serve to end (n.ctx ended), so its lanes write
// nothing more and record nothing in a closed store; a local leg that
// does not heed its context is waited for serveWait at most.
func (n *Node) waitServe() {
	done := make(chan struct{})
	go func() { n.serving.Wait(); close(done) }()
	late, t := clock.After(n.cfg.Clock, serveWait)
	defer t.Stop()
	select {
	case <-done:
	case <-late:
		n.log.Warn("federation closing while Serve still writes to the local leg")
	}
}

const serveWait = 10 * time.Second

func (n *Node) shutdownServer() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
	}
}

func randomID() string {
	var b [12]byte
	_, _ = cryptoRand(b[:])
	return hex.EncodeToString(b[:])
}

var cryptoRand = crand.Read

// ClientURL is the embedded server's URL other gateways join, or "" when
// this gateway joined a cluster it does not run.
func (n *Node) ClientURL() string {
	if n.srv == nil {
		return ""
	}
	return n.srv.ClientURL()
}
