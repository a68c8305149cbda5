package federation

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// Local is what Serve needs of this gateway: the sessions it reaches (to
// publish) and a way to deliver a message that arrived for one of them.
// Deliver returns the first receipt: sent (or queued) when the local leg
// took the message and its outcome follows through Relay, or that outcome
// itself (delivered, held, dropped, failed...). An error with no status
// means nothing was written: the message is offered again.
type Local struct {
	Sessions func(ctx context.Context) ([]message.Session, error)
	Deliver  func(ctx context.Context, m message.Message) (message.Receipt, error)
}

// rosterPoll is how often Serve looks for a change in the local sessions.
const rosterPoll = time.Second

// inboundPending caps the messages this host holds unacknowledged: each
// is in memory (up to MaxEnvelope) until its outcome is known, so their
// bytes are capped too (inflightBytes): past it the consumer waits. A
// message to a Claude Code session is held for the leg's settle window
// (2 s by default: Claude Code says nothing of a clean delivery), so the
// cap over that window bounds this host's rate: 8,192 allows 4,000 msg/s.
const (
	inboundPending = 8192
	inflightBytes  = 64 << 20
)

// outcomeWait bounds the wait for a decisive receipt after the local leg
// took a message (a receipt the router forgot, a leg that sends none):
// past it the message is acknowledged as taken.
const outcomeWait = 2 * time.Minute

// Serve publishes the local sessions and consumes the messages other hosts
// send to this one, until ctx ends.
//
// Each message is acknowledged only once the local leg's outcome is known
// (delivered, held, denied, dropped, expired, refused, failed), and kept
// unacknowledged (NATS told it is in progress) until then. What became of
// it is written to the settled store first, so a message NATS offers again
// (a lost acknowledgement, a failover, this gateway restarted after a
// crash) is answered with its receipt, never delivered twice. Messages of
// one sender are written to the local leg in stream order: one at a time,
// or, to a writer that keeps their order (an alias worker), up to
// Config.LaneWindow at once, each handed over once the one before has its place.
//
// Serve also ends when the node closes; Close waits for it (for a while),
// so no message is written to the local leg once the stores are closed.
func (n *Node) Serve(ctx context.Context, local Local) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.serving.Add(1) // under mu, before Close can wait
	n.mu.Unlock()
	defer n.serving.Done()
	in := &inflight{flights: map[string]*flight{}, lanes: map[string]*lane{}}
	var lanes sync.WaitGroup
	defer lanes.Wait()
	// The lanes and the handler stop when either ctx or the node ends.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(n.ctx, stop)()
	deliver := n.onlyPublished(local.Deliver)
	// gate holds the consumer's handler out once Serve is stopping: the
	// consumer's Stop does not wait for a handler already running, which
	// would start a lane while lanes.Wait runs.
	var gate sync.Mutex
	stopped := false
	cc, err := n.consume(ctx, "in-", inSubject(n.cfg.Host), inboundPending, func(msg jetstream.Msg) {
		gate.Lock()
		defer gate.Unlock()
		if stopped {
			return // unacknowledged: NATS offers it again
		}
		if n.onInbound != nil {
			n.onInbound(ctx)
		}
		n.inbound(ctx, in, &lanes, msg, deliver)
	})
	if err != nil {
		if ctx.Err() != nil || n.ctx.Err() != nil {
			return nil // stopped or closed while starting
		}
		return fmt.Errorf("federation: inbound consumer: %w", err)
	}
	defer func() {
		stop() // a handler running returns (its waits end with ctx)
		cc.Stop()
		gate.Lock()
		stopped = true
		gate.Unlock()
	}()
	n.mu.Lock()
	n.in = in
	n.mu.Unlock()
	publish := func() {
		if local.Sessions != nil {
			ss, err := local.Sessions(ctx)
			if err != nil {
				return
			}
			if err := n.PublishSessions(ctx, ss); err != nil && ctx.Err() == nil {
				n.log.Warn("federation roster not published", "err", err)
			}
		}
		n.mu.Lock()
		n.shown = true // what to refuse is known now
		n.mu.Unlock()
	}
	publish()
	t := clock.NewTicker(n.cfg.Clock, rosterPoll)
	defer t.Stop()
	every := max(n.cfg.AckWait/3, 100*time.Millisecond)
	progress := clock.NewTicker(n.cfg.Clock, every)
	defer progress.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-progress.C:
			in.progress(n, every)
		case <-t.C:
			publish()
		}
	}
}

// inflight is what Serve holds unacknowledged: each message by its
// settled key, and the lanes that write them, one per sender.
type inflight struct {
	mu      sync.Mutex
	bytes   int                // of the flights' messages
	flights map[string]*flight // origin/id -> the message
	lanes   map[string]*lane   // origin/sender -> its lane, while it has messages
}

// flight is one message from another host on its way to the local leg.
type flight struct {
	key, origin string
	m           message.Message
	msg         jetstream.Msg // its latest delivery: the one acknowledged
	told        time.Time     // when NATS last heard of it (delivered, in progress)
	took        time.Time     // when the local leg took it; zero before
	heard       chan struct{} // closed when its outcome is heard
	wasHeard    bool
	ctx         context.Context // Serve's, with the sender's trace
	end         func()          // ends the receiving span
}

// hear marks f's outcome heard; in.mu held.
func (f *flight) hear() {
	if !f.wasHeard {
		f.wasHeard = true
		close(f.heard)
	}
}

// progress tells NATS the messages held for a while are still being
// worked on (one held briefly needs no word: most settle well within
// AckWait), and lets go of one taken long ago whose outcome never came.
func (in *inflight) progress(n *Node, every time.Duration) {
	in.mu.Lock()
	defer in.mu.Unlock()
	now := n.now()
	for key, f := range in.flights {
		if !f.took.IsZero() && now.Sub(f.took) > outcomeWait {
			n.log.Warn("federation message taken, no outcome heard; acknowledged", "msg_id", f.m.ID, "from_host", f.origin)
			_ = f.msg.Ack()
			in.drop(key)
			continue
		}
		if now.Sub(f.told) >= every {
			_ = f.msg.InProgress()
			f.told = now
		}
	}
}

// inbound handles one message for this host. It runs on the consumer's one
// goroutine, in stream order; the local legs are written from the lanes.
func (n *Node) inbound(ctx context.Context, in *inflight, lanes *sync.WaitGroup, msg jetstream.Msg, deliver func(context.Context, message.Message) (message.Receipt, error)) {
	e, reason := n.decode(msg)
	if reason == 0 && e.Kind == kindAnswer {
		n.answerIn(ctx, msg, e)
		return
	}
	if reason == 0 && e.Kind != kindMessage {
		reason = ReasonMisrouted
	}
	if reason != 0 {
		n.drops.add(reason)
		n.log.Debug("federation message dropped", "reason", reason.String()) // counted; a flood must not flood the log
		_ = msg.Term()
		return
	}
	m := *e.Message
	ctx, end := n.received(ctx, msg, e.From, m.ID) // the span ends when the local leg has it
	key := settledKey(e.From, m.ID)
	in.mu.Lock()
	if f, ok := in.flights[key]; ok {
		other := streamSeq(f.msg) != streamSeq(msg)
		if !other {
			f.msg, f.told = msg, n.now() // offered again while on its way: one copy is enough
		}
		in.mu.Unlock()
		end()
		if other {
			// A second copy in the stream (its sender signed it again
			// after a long cut): the one held stands for both.
			_ = msg.Ack()
		}
		return
	}
	in.mu.Unlock()
	// Not in flight: then any outcome it had is in the settled store.
	if rc, ok := n.settled.get(key); ok {
		defer end()
		if decisive(rc) {
			n.ackAfterReceipt(ctx, msg, e.From, rc) // say it again in case the receipt was lost
			return
		}
		// Taken by the local leg before a restart, its outcome unknown:
		// written once already, never again.
		_ = msg.Ack()
		return
	}
	sender := e.From + "/" + m.FromName
	m.From, m.FromName = fromAddress(m.FromName, e.From)
	// Known before delivery: a receipt may be relayed before Deliver returns.
	n.origin.Put(m.ID, e.From)
	f := &flight{key: key, origin: e.From, m: m, msg: msg, told: n.now(), heard: make(chan struct{}), ctx: ctx, end: end}
	in.mu.Lock()
	in.flights[key] = f
	in.bytes += len(msg.Data())
	l, running := in.lanes[sender]
	if !running {
		l = &lane{wake: make(chan struct{}, 1)}
		in.lanes[sender] = l
	}
	l.queue = append(l.queue, f)
	in.mu.Unlock()
	if running {
		l.poke()
	} else {
		lanes.Go(func() { n.runLane(ctx, in, sender, l, deliver) })
	}
	// Back-pressure: while the messages held pass inflightBytes, take no
	// more (NATS keeps them).
	for in.held() > inflightBytes && ctx.Err() == nil {
		_ = clock.Sleep(ctx, n.cfg.Clock, 10*time.Millisecond)
	}
}

// streamSeq is msg's sequence in the stream, 0 when it does not say.
func streamSeq(msg jetstream.Msg) uint64 {
	md, err := msg.Metadata()
	if err != nil {
		return 0
	}
	return md.Sequence.Stream
}

// held is the bytes of the messages held.
func (in *inflight) held() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.bytes
}

// drop lets go of the flight key; in.mu held.
func (in *inflight) drop(key string) {
	if f, ok := in.flights[key]; ok {
		in.bytes -= len(f.msg.Data())
		delete(in.flights, key)
	}
}

// settle records rc, the outcome of the message key from origin, sends it
// to origin, and acknowledges the message if this host still holds it.
// When the receipt cannot be sent, the message is offered again and the
// receipt re-sent from the settled store then. A record already made
// (the lane's, before it wrote the sender's next) is not made again.
func (n *Node) settle(ctx context.Context, key, origin string, rc message.Receipt, recorded bool) {
	n.mu.Lock()
	in := n.in
	n.mu.Unlock()
	var f *flight
	if in != nil {
		in.mu.Lock()
		if f = in.flights[key]; f != nil {
			f.hear()
		}
		in.mu.Unlock()
	}
	// Recorded before the flight is let go: a copy offered meanwhile finds
	// one or the other.
	if !recorded {
		if err := n.settled.put(key, rc); err != nil {
			n.log.Warn("federation settled id not recorded", "msg_id", rc.MsgID, "err", err)
		}
	}
	if n.beforeReceipt != nil {
		n.beforeReceipt(rc)
	}
	err := n.sendReceipt(ctx, origin, rc)
	if f == nil {
		return
	}
	in.mu.Lock()
	var msg jetstream.Msg
	if in.flights[key] == f {
		msg = f.msg
		in.drop(key)
	}
	in.mu.Unlock()
	switch {
	case msg == nil:
	case err != nil:
		_ = msg.NakWithDelay(time.Second)
	default:
		_ = msg.Ack()
	}
}

// ackAfterReceipt sends rc to the origin and acknowledges msg; when the
// receipt cannot be sent, msg is offered again and the receipt re-sent
// from the settled store then.
func (n *Node) ackAfterReceipt(ctx context.Context, msg jetstream.Msg, origin string, rc message.Receipt) {
	if err := n.sendReceipt(ctx, origin, rc); err != nil {
		_ = msg.NakWithDelay(time.Second)
		return
	}
	_ = msg.Ack()
}

// settledKey names a message by its origin too, so one host cannot mark
// another's message id delivered before it arrives.
func settledKey(origin, id string) string { return origin + "/" + id }

// fromAddress is the sender of a message from host as this host shows it:
// NAME@HOST and NAME.HOST, as the sender's session is listed here.
func fromAddress(name, host string) (address, display string) {
	if name == "" {
		return host, host
	}
	return name + "@" + host, name + "." + host
}

// hostOf is the host a sender's address from fromAddress names (the
// text after its last @, or all of it), or "" when that is no other
// host: a local sender's address, this host's own name.
func (n *Node) hostOf(from string) string {
	host := from[strings.LastIndexByte(from, '@')+1:]
	if !ValidHost(host) || host == n.cfg.Host {
		return ""
	}
	return host
}

// Relay sends a later receipt (delivered, held, denied, ...) of a message
// that came from another host back to that host; the first decisive one
// settles the message (recorded, then acknowledged). It reports false
// when the message did not come through the federation (or is too old to
// be remembered). It does not wait for the receipt to be published: the
// router relays from a few goroutines it bounds, and a stream electing
// its leader must not fill them.
func (n *Node) Relay(ctx context.Context, rc message.Receipt) bool { return n.relay(ctx, "", rc) }

// relay is Relay for a message whose sender's address is from: its host
// is the origin (a message held for a person may be decided long after
// the origin map, which traffic flushes, forgot it), the map only when
// from names no other host.
func (n *Node) relay(ctx context.Context, from string, rc message.Receipt) bool {
	origin := n.hostOf(from)
	if origin == "" {
		var ok bool
		if origin, ok = n.origin.Get(rc.MsgID); !ok {
			return false
		}
	}
	if rc.Time.IsZero() {
		rc.Time = n.now()
	}
	if !decisive(rc) {
		return true // taken: deliverFlight records that
	}
	key := settledKey(origin, rc.MsgID)
	n.mu.Lock()
	in := n.in
	n.mu.Unlock()
	if in != nil {
		in.mu.Lock()
		if f := in.flights[key]; f != nil {
			f.hear() // its lane may write the sender's next now
		}
		in.mu.Unlock()
	}
	n.toShard(ctx, relayed{key: key, origin: origin, rc: rc})
	return true
}

// relayed is a decisive receipt waiting to be settled.
type relayed struct {
	key, origin string
	rc          message.Receipt
	recorded    bool // in the settled store already
}

// toShard queues r on its message's shard. Every decisive receipt of a
// message (its lane's own outcome, relayed ones) goes this way, so they
// reach its origin in the order they were queued: a hold, then the
// delivery its release brought. A full shard is waited for; when ctx ends
// first, r is settled at once rather than lost.
func (n *Node) toShard(ctx context.Context, r relayed) {
	shard := n.relays[shardOf(r.key)]
	select {
	case shard <- r:
		return
	default:
	}
	select {
	case shard <- r:
	case <-n.ctx.Done(): // closing: unacknowledged, NATS offers it again
	case <-ctx.Done():
		n.settle(n.ctx, r.key, r.origin, r.rc, false)
	}
}

// relayQueue bounds the receipts waiting to be settled: more than this
// host holds unacknowledged, with room for later ones (held, then
// delivered).
const relayQueue = 4 * inboundPending

// relayShards is how many receipts are settled at once: each waits for
// the stream to store it, so one at a time would bound this host's
// messages to one stream round trip each. A message's receipts all go to
// one shard, in order (held, then delivered).
const relayShards = 16

// shardOf is the shard that settles the receipts of the message key.
func shardOf(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % relayShards)
}

func (n *Node) sendReceipt(ctx context.Context, host string, rc message.Receipt) error {
	err := n.publish(ctx, receiptSubject(host), "rc."+rc.MsgID+"."+rc.Status.String(), func() ([]byte, error) {
		return n.encode(envelope{Kind: kindReceipt, From: n.cfg.Host, To: host, Receipt: &rc})
	})
	n.receiptCounted(ctx, host, "out", rc.Status, err)
	if err != nil {
		n.log.Warn("federation receipt not sent", "msg_id", rc.MsgID, "status", rc.Status, "err", err)
	}
	return err
}

// publish writes what sign makes (an envelope, signed when called) to
// subject, retrying until it is stored or ctx ends: a leader change or a
// reconnect is a pause, not a loss. One signing is tried for half the
// replay window at most, and only while the link is up (never into the
// client's reconnect buffer, which would store it late); past that it is
// signed again. Its de-duplication id is id with the quarter of the window
// it was signed in: retries of one signing, and signings close together,
// are one copy in the stream, and a copy stored late is never taken for a
// later one, which the receiver would drop as a replay once the sender
// called it sent. The receiver keeps two copies to one delivery (its
// settled ids).
func (n *Node) publish(ctx context.Context, subject, id string, sign func() ([]byte, error)) error {
	waits := clock.Backoff{Initial: 50 * time.Millisecond, Max: 2 * time.Second}.New(n.cfg.Clock)
	var (
		b       []byte
		dedup   string
		expires time.Time
	)
	for try := 1; ; try++ {
		var err error
		now := n.now()
		if b == nil || !now.Before(expires) {
			if b, err = sign(); err != nil {
				return err
			}
			dedup, expires = signedID(id, now, n.cfg.ReplayWindow), now.Add(n.cfg.ReplayWindow/2)
		}
		if n.nc.Status() != nats.CONNECTED {
			err = errLinkDown
		} else {
			actx, cancel := context.WithTimeout(ctx, min(2*time.Second, expires.Sub(n.now())))
			_, err = n.js.PublishMsg(actx, &nats.Msg{Subject: subject, Data: b, Header: traceHeader(ctx)}, jetstream.WithMsgID(dedup))
			cancel()
			if err == nil {
				return nil
			}
			if permanent(err) {
				return fmt.Errorf("federation: publish to %s: %w", subject, err)
			}
		}
		// Said once it failed twice and then about every half minute: a
		// publish that keeps failing is otherwise silent.
		if try == 2 || try%16 == 0 {
			n.log.Warn("federation publish retrying", "subject", subject, "msg_id", id, "try", try, "err", err)
		}
		fired, t := clock.After(n.cfg.Clock, waits.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("federation: publish to %s: %w", subject, err)
		case <-n.ctx.Done():
			t.Stop()
			return fmt.Errorf("federation: closed: %w", err)
		case <-fired:
		}
	}
}

// errLinkDown is a publish waiting for the link to come back.
var errLinkDown = errors.New("the NATS link is down")

// signedID is the stream's de-duplication id of id signed at: two
// signings share it only when made within a quarter of window of each
// other, so a copy it stands for was signed within that of any other,
// and stored (before the other's half window ran out) within
// three quarters of window of its signing.
func signedID(id string, at time.Time, window time.Duration) string {
	q := max(window/4, time.Millisecond)
	return id + "." + strconv.FormatInt(at.UnixNano()/int64(q), 36)
}

// permanent reports whether a publish error would recur on a retry.
func permanent(err error) bool {
	var api *jetstream.APIError
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) ||
		errors.As(err, &api) && api.Code == 400
}

// consume creates (or opens) this host's durable consumer of subject and
// runs handle for each message. It waits for the consumer's leader first,
// and pulls with a short heartbeat: a pull the cluster could not answer (a
// consumer or stream leader being elected) is noticed and made again in
// seconds, not tens of them.
func (n *Node) consume(ctx context.Context, prefix, subject string, pending int, handle func(jetstream.Msg)) (jetstream.ConsumeContext, error) {
	cons, err := retry(ctx, n.cfg.Clock, func(ctx context.Context) (jetstream.Consumer, error) {
		return n.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       prefix + n.cfg.Host,
			FilterSubject: subject,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       n.cfg.AckWait,
			MaxDeliver:    -1,
			MaxAckPending: pending,
		})
	})
	if err != nil {
		return nil, err
	}
	_, err = retry(ctx, n.cfg.Clock, func(ctx context.Context) (bool, error) {
		info, err := cons.Info(ctx)
		if err == nil && info.Cluster != nil && info.Cluster.Leader == "" {
			err = errNoLeader
		}
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return cons.Consume(handle,
		jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(time.Second),
		jetstream.PullMaxBytes(pullBytes), // what the client buffers: a few envelopes at the cap, not hundreds
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			n.log.Debug("federation consumer", "subject", subject, "err", err)
		}))
}

// pullBytes bounds what a consumer's client buffers ahead of its handler.
const pullBytes = 8 * MaxEnvelope

// errNoLeader is a consumer whose leader is still being elected.
var errNoLeader = errors.New("the consumer has no leader yet")
