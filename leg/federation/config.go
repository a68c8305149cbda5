package federation

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

// Embedded is the URLs value that starts an in-process NATS server.
const Embedded = "embedded"

// Defaults. A vanished host leaves every roster within RosterTTL plus one
// heartbeat, inside the 30 s README.md promises.
const (
	DefaultRosterTTL = 20 * time.Second
	DefaultListen    = "127.0.0.1:4222"
	DefaultAckWait   = 10 * time.Second // a message being worked on is kept in progress; this is how soon a crash's are offered again
	// DefaultLaneWindow keeps the promise that a crash of the receiving
	// gateway writes at most one message of a sender twice.
	DefaultLaneWindow = 1
)

// Config is how a gateway joins the federation.
type Config struct {
	// URLs is comma-separated nats://HOST:PORT, or Embedded.
	URLs string
	// Host names this gateway in the federation: 1 to 63 of [a-z0-9-],
	// so NAME.HOST and NAME@HOST spell well everywhere. Empty: the
	// machine's hostname, sanitised (SanitizeHost).
	Host string
	// Instance tells this gateway apart from another claiming the same
	// Host: a restart with the same Instance takes its lease over at once.
	// Empty: a random one (a restart then waits for the old lease to lapse).
	Instance string

	CredsFile string // a NATS .creds file (JWT and nkey seed)
	NKeyFile  string // an nkey seed file
	TLSCA     string
	TLSCert   string
	TLSKey    string

	// Publish, when not empty, limits the local sessions other hosts see
	// (and may send to) to those whose name matches one of these
	// path.Match patterns.
	Publish []string

	// Key is this host's signing key; nil: the one in KeyFile, which is
	// written on first use. KeyFile empty: KeyFile(StateDir); no StateDir
	// either: a key that lives as long as the process.
	Key     ed25519.PrivateKey
	KeyFile string
	// TrustFile pins the other hosts' keys (ParseTrust); empty: each host's
	// key is pinned the first time it is seen, in StateDir.
	TrustFile string
	// ReplayWindow bounds how long before it was stored an envelope may
	// have been signed. Zero: DefaultReplayWindow.
	ReplayWindow time.Duration

	// ServerConfig is a nats-server configuration file the embedded
	// server loads (its authorization, accounts, TLS); NoAuth lets it
	// listen beyond loopback without any authentication.
	ServerConfig string
	NoAuth       bool

	// Listen and StateDir are for Embedded: the client address other
	// gateways join, and the directory JetStream stores under
	// (StateDir/federation).
	Listen   string
	StateDir string

	// RosterTTL is how long a host's roster entry and lease live without a
	// heartbeat; heartbeats come every third of it. Zero: DefaultRosterTTL.
	RosterTTL time.Duration
	// AckWait is how long a delivered-but-unacknowledged message waits
	// before NATS offers it again. Zero: DefaultAckWait.
	AckWait time.Duration
	// LaneWindow is how many of one sender's messages are handed to a
	// local writer that keeps their order (an alias worker) before the
	// first is answered. More is faster; a crash of this gateway may then
	// write up to that many of a sender's messages twice (Claude Code does
	// not tell a second copy). Zero: DefaultLaneWindow.
	LaneWindow int
	// Replicas of the stream and buckets; zero tries 3 and falls back to 1
	// when the cluster is smaller.
	Replicas int

	// SettledCap is how many settled message ids are kept (StateDir's
	// store); zero: DefaultSettledCap.
	SettledCap int
	// SpoolPerHost and SpoolTotal cap the sends kept while the link is
	// down, for one host and for all; SpoolBytes caps their size. Beyond
	// them a send is refused (*SpoolFullError). Zero: the defaults.
	SpoolPerHost, SpoolTotal int
	SpoolBytes               int64

	// Clock is what every timestamp, timer, tick and retry wait of the
	// node reads; nil: the wall clock. Contexts' deadlines and the NATS
	// client's own timers keep the wall clock.
	Clock clock.Clock

	Log *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if strings.TrimSpace(c.URLs) == "" {
		return c, errors.New("federation: no URLs: give nats://HOST:PORT[,...] or embedded")
	}
	if c.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return c, fmt.Errorf("federation: no host name given and the hostname is unknown: %w", err)
		}
		c.Host = SanitizeHost(h)
	}
	if !ValidHost(c.Host) {
		return c, fmt.Errorf("federation: host name %q: use 1 to 63 of a-z 0-9 -, not starting or ending with -", c.Host)
	}
	if err := checkPublish(c.Publish); err != nil {
		return c, err
	}
	if c.RosterTTL <= 0 {
		c.RosterTTL = DefaultRosterTTL
	}
	if c.AckWait <= 0 {
		c.AckWait = DefaultAckWait
	}
	if c.LaneWindow <= 0 {
		c.LaneWindow = DefaultLaneWindow
	}
	if c.ReplayWindow <= 0 {
		c.ReplayWindow = DefaultReplayWindow
	}
	if c.SettledCap <= 0 {
		c.SettledCap = DefaultSettledCap
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	c.Clock = clock.Or(c.Clock)
	if c.Instance == "" {
		c.Instance = randomID()
	}
	return c, nil
}

func (c Config) heartbeat() time.Duration { return c.RosterTTL / 3 }

// now is the time on the node's clock.
func (n *Node) now() time.Time { return n.cfg.Clock.Now() }

// ValidHost reports whether h is a host name the federation accepts: it is
// a NATS subject token and a key in the buckets, so no dots or wildcards.
func ValidHost(h string) bool {
	if h == "" || len(h) > 63 || h[0] == '-' || h[len(h)-1] == '-' {
		return false
	}
	for i := range len(h) {
		if !hostByte(h[i]) {
			return false
		}
	}
	return true
}

func hostByte(b byte) bool { return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' }

// SanitizeHost turns a machine's hostname into a valid host name: its
// first label, lower-cased, every run of other characters one "-".
func SanitizeHost(h string) string {
	h, _, _ = strings.Cut(strings.ToLower(h), ".")
	var b strings.Builder
	dash := false
	for i := range len(h) {
		if hostByte(h[i]) && h[i] != '-' {
			b.WriteByte(h[i])
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > 63 {
		s = strings.TrimRight(s[:63], "-")
	}
	if s == "" {
		return "gateway"
	}
	return s
}
