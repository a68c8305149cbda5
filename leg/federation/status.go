package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
)

// Link states, as status and /readyz spell them.
const (
	LinkConnected    = "connected"
	LinkConnecting   = "connecting"
	LinkReconnecting = "reconnecting"
	LinkDraining     = "draining"
	LinkClosed       = "closed"
)

// link remembers why the connection to NATS last went down and why the
// last try to get it back failed; the state itself is the connection's.
type link struct {
	mu          sync.Mutex
	lost, retry string
	since       time.Time // of the last change between up and down
}

func (l *link) down(err error, now time.Time) {
	l.mu.Lock()
	l.lost, l.retry, l.since = err.Error(), "", now
	l.mu.Unlock()
}

func (l *link) retrying(err error) {
	l.mu.Lock()
	l.retry = err.Error()
	l.mu.Unlock()
}

func (l *link) up(now time.Time) {
	l.mu.Lock()
	l.lost, l.retry, l.since = "", "", now
	l.mu.Unlock()
}

// reason says why the link is down: what broke it, and what the last try
// to get it back met.
func (l *link) reason() string {
	switch {
	case l.retry == "":
		return l.lost
	case l.lost == "":
		return l.retry
	}
	return l.lost + "; last retry: " + l.retry
}

// LinkStatus is this host's connection to NATS.
type LinkStatus struct {
	State      string    `json:"state"`
	Reason     string    `json:"reason,omitempty"` // why it went down, while it is not connected
	Since      time.Time `json:"since,omitzero"`
	Server     string    `json:"server,omitempty"` // the node it is connected to, credentials redacted
	Reconnects uint64    `json:"reconnects"`
}

// Link reports this host's connection to NATS.
func (n *Node) Link() LinkStatus {
	st := LinkStatus{Reconnects: n.nc.Stats().Reconnects}
	switch n.nc.Status() {
	case nats.CONNECTED:
		st.State, st.Server = LinkConnected, redactURLs(n.nc.ConnectedUrlRedacted())
	case nats.CONNECTING:
		st.State = LinkConnecting
	case nats.RECONNECTING, nats.DISCONNECTED:
		st.State = LinkReconnecting
	case nats.DRAINING_PUBS, nats.DRAINING_SUBS:
		st.State = LinkDraining
	default:
		st.State = LinkClosed
	}
	n.link.mu.Lock()
	st.Since = n.link.since
	if st.State != LinkConnected {
		st.Reason = n.link.reason()
	}
	n.link.mu.Unlock()
	if st.State == LinkClosed && st.Reason == "" {
		st.Reason = "the gateway left the federation"
	}
	return st
}

// Ready reports whether the link to NATS is up, and why not.
func (n *Node) Ready() error {
	st := n.Link()
	if st.State == LinkConnected {
		return nil
	}
	if st.Reason == "" {
		return fmt.Errorf("federation: link %s", st.State)
	}
	return fmt.Errorf("federation: link %s (%s)", st.State, st.Reason)
}

// HostStatus is one host of the federation as this one last heard it.
type HostStatus struct {
	Host      string    `json:"host"`
	Self      bool      `json:"self,omitempty"`
	Sessions  int       `json:"sessions"`
	LastHeard time.Time `json:"last_heard,omitzero"`
	// Age is how long ago LastHeard was, in seconds.
	Age float64 `json:"age_seconds"`
	// Reachable is false once the host was not heard within the roster
	// TTL: its sessions are no longer listed.
	Reachable bool `json:"reachable"`
}

// ConsumerStatus is the lag of one of this host's durable consumers:
// messages stored for it and not yet handed out (Pending), and handed out
// and not yet acknowledged (AckPending).
type ConsumerStatus struct {
	Name       string `json:"name"`
	Pending    uint64 `json:"pending"`
	AckPending int    `json:"ack_pending"`
	Error      string `json:"error,omitempty"` // when it could not be read
}

// Status is `gateway federation status`: GET /v1/federation's answer.
type Status struct {
	Enabled   bool              `json:"enabled"`
	Host      string            `json:"host,omitempty"`
	Link      *LinkStatus       `json:"link,omitempty"`
	Hosts     []HostStatus      `json:"hosts,omitempty"`
	Consumers []ConsumerStatus  `json:"consumers,omitempty"`
	Drops     map[string]uint64 `json:"drops,omitempty"` // what was read from NATS and dropped, by reason
}

// statusTimeout bounds the consumer lookups of Status: a link that is
// down must not hold up the answer.
const statusTimeout = 2 * time.Second

// Status reports this host's view of the federation. A nil Node reports
// Enabled false.
func (n *Node) Status(ctx context.Context) Status {
	if n == nil {
		return Status{}
	}
	link := n.Link()
	st := Status{Enabled: true, Host: n.cfg.Host, Link: &link, Drops: map[string]uint64{}}
	now := n.now()
	n.mu.Lock()
	st.Hosts = append(st.Hosts, HostStatus{Host: n.cfg.Host, Self: true, Sessions: len(n.published), LastHeard: n.putAt,
		Reachable: !n.putAt.IsZero() && now.Sub(n.putAt) <= n.cfg.RosterTTL})
	for host, h := range n.others {
		st.Hosts = append(st.Hosts, HostStatus{Host: host, Sessions: len(h.sessions), LastHeard: h.seen, Reachable: now.Sub(h.seen) <= n.cfg.RosterTTL})
	}
	n.mu.Unlock()
	for i := range st.Hosts {
		if h := &st.Hosts[i]; !h.LastHeard.IsZero() {
			h.Age = now.Sub(h.LastHeard).Round(time.Millisecond).Seconds()
		}
	}
	slices.SortFunc(st.Hosts[1:], func(a, b HostStatus) int { return strings.Compare(a.Host, b.Host) })
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	for _, name := range []string{"in-" + n.cfg.Host, "rc-" + n.cfg.Host} {
		st.Consumers = append(st.Consumers, n.consumerStatus(ctx, name))
	}
	for r, c := range n.Dropped() {
		st.Drops[r.String()] = c
	}
	return st
}

func (n *Node) consumerStatus(ctx context.Context, name string) ConsumerStatus {
	cs := ConsumerStatus{Name: name}
	c, err := n.stream.Consumer(ctx, name)
	if err == nil {
		info, ierr := c.Info(ctx)
		if err = ierr; err == nil {
			cs.Pending, cs.AckPending = info.NumPending, info.NumAckPending
		}
	}
	if err != nil {
		cs.Error = err.Error()
	}
	return cs
}

// ErrNotEnabled is what `gateway federation status` says of a gateway
// that runs without --federation.
var ErrNotEnabled = errors.New("federation is not enabled on this gateway (start it with --federation nats://HOST:PORT[,...] or --federation embedded)")

// WriteStatus writes raw, GET /v1/federation's answer, for people (a
// table) or as indented JSON. It returns ErrNotEnabled when the gateway
// runs without federation, after writing the JSON when asked for it.
func WriteStatus(w io.Writer, raw []byte, asJSON bool) error {
	var st Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("federation status: %w", err)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return err
		}
	}
	if !st.Enabled {
		return ErrNotEnabled
	}
	if asJSON {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tSESSIONS\tLAST HEARD\tREACHABLE")
	for _, h := range st.Hosts {
		name, heard := h.Host, "never"
		if h.Self {
			name += " (this host)"
		}
		if !h.LastHeard.IsZero() {
			heard = (time.Duration(h.Age * float64(time.Second))).Round(100*time.Millisecond).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%v\n", name, h.Sessions, heard, h.Reachable)
	}
	tw.Flush()
	if l := st.Link; l != nil {
		fmt.Fprintf(w, "\nlink: %s", l.State)
		if l.Server != "" {
			fmt.Fprintf(w, " to %s", l.Server)
		}
		if l.Reason != "" {
			fmt.Fprintf(w, " (%s)", l.Reason)
		}
		fmt.Fprintf(w, ", %d reconnects\n", l.Reconnects)
	}
	for _, c := range st.Consumers {
		if c.Error != "" {
			fmt.Fprintf(w, "consumer %s: unknown (%s)\n", c.Name, c.Error)
			continue
		}
		fmt.Fprintf(w, "consumer %s: %d pending, %d awaiting acknowledgement\n", c.Name, c.Pending, c.AckPending)
	}
	reasons := make([]string, 0, len(st.Drops))
	for r, c := range st.Drops {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, c))
	}
	slices.Sort(reasons)
	if len(reasons) == 0 {
		reasons = append(reasons, "none")
	}
	fmt.Fprintf(w, "drops: %s\n", strings.Join(reasons, ", "))
	return nil
}

// StatusFunc is Status as the API takes it; nil for a nil Node.
func (n *Node) StatusFunc() func(context.Context) any {
	if n == nil {
		return nil
	}
	return func(ctx context.Context) any { return n.Status(ctx) }
}
