package federation

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	bolt "go.etcd.io/bbolt"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// Defaults of the spool's caps: what this host keeps of its sends to
// other hosts while it cannot reach the stream.
const (
	DefaultSpoolPerHost = 10_000
	DefaultSpoolTotal   = 50_000
	DefaultSpoolBytes   = 256 << 20
)

// directWait bounds a send's own attempt to have the stream store it (a
// leader election, a link that dropped without a word); past it the send
// is spooled and answered queued.
const directWait = 3 * time.Second

type spoolLimits struct {
	perHost, total int
	bytes          int64
}

func (c Config) spoolLimits() spoolLimits {
	l := spoolLimits{perHost: c.SpoolPerHost, total: c.SpoolTotal, bytes: c.SpoolBytes}
	if l.perHost <= 0 {
		l.perHost = DefaultSpoolPerHost
	}
	if l.total <= 0 {
		l.total = DefaultSpoolTotal
	}
	if l.bytes <= 0 {
		l.bytes = DefaultSpoolBytes
	}
	return l
}

// SpoolFullError is a send to another host refused because the sends kept
// for the link to come back reached a cap. It wraps message.ErrNotAccepted:
// nothing was kept, and the same send may work later.
type SpoolFullError struct {
	Host  string // the target host
	Scope string // "host" (that host's cap), "all" or "bytes"
	Kept  int64  // what is kept now in that scope, messages or bytes
	Max   int64
}

func (e *SpoolFullError) Error() string {
	return fmt.Sprintf("federation: the spool of sends waiting for the NATS link is full (%s: %d of %d kept)", e.Scope, e.Kept, e.Max)
}

func (e *SpoolFullError) Unwrap() error { return message.ErrNotAccepted }

// spoolEntry is one kept send as the file holds it: the envelope as it
// will be published, under its message id.
type spoolEntry struct {
	V    int       `json:"v"`
	Host string    `json:"host"`
	ID   string    `json:"id"`
	Data []byte    `json:"data"`
	At   time.Time `json:"at"`
}

// spooled is a kept send in the spool's index (its data stays on disk).
type spooled struct {
	seq      uint64
	host, id string
	size     int64
	data     []byte // memory-only spool
}

// spool keeps sends to other hosts, in the order they were accepted,
// until the stream stores them. It is safe for concurrent use.
type spool struct {
	db   *bolt.DB // nil: memory only
	lim  spoolLimits
	kick chan struct{}
	clk  clock.Clock

	mu      sync.Mutex
	queue   []spooled // by seq
	perHost map[string]int
	count   int   // kept and being kept
	bytes   int64 // of count
	seq     uint64
}

func newSpool(db *bolt.DB, lim spoolLimits, clk clock.Clock) (*spool, error) {
	s := &spool{db: db, lim: lim, clk: clk, kick: make(chan struct{}, 1), perHost: map[string]int{}}
	if db == nil {
		return s, nil
	}
	err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSpool).ForEach(func(k, v []byte) error {
			sp, ok := decodeSpooled(k, v)
			if !ok {
				return nil // left for a person to look at, never sent
			}
			s.queue = append(s.queue, sp)
			s.perHost[sp.host]++
			s.count++
			s.bytes += sp.size
			return nil
		})
	})
	return s, err
}

// decodeSpooled reads a kept send's index entry as the file holds it.
func decodeSpooled(k, v []byte) (spooled, bool) {
	var e spoolEntry
	if len(k) != 8 || json.Unmarshal(v, &e) != nil || e.V != storeVersion || !ValidHost(e.Host) || !validID(e.ID) || len(e.Data) == 0 {
		return spooled{}, false
	}
	return spooled{seq: seqOf(k), host: e.Host, id: e.ID, size: int64(len(e.Data))}, true
}

func seqOf(k []byte) uint64 {
	var n uint64
	for _, b := range k {
		n = n<<8 | uint64(b)
	}
	return n
}

// len is how many sends are kept (or being kept).
func (s *spool) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

func (s *spool) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// add keeps data, the envelope of message id for host, on disk, or says
// why not (a *SpoolFullError, or the file's error).
func (s *spool) add(host, id string, data []byte) error {
	size := int64(len(data))
	s.mu.Lock()
	var full *SpoolFullError
	switch {
	case s.perHost[host] >= s.lim.perHost:
		full = &SpoolFullError{Host: host, Scope: "host", Kept: int64(s.perHost[host]), Max: int64(s.lim.perHost)}
	case s.count >= s.lim.total:
		full = &SpoolFullError{Host: host, Scope: "all", Kept: int64(s.count), Max: int64(s.lim.total)}
	case s.bytes+size > s.lim.bytes:
		full = &SpoolFullError{Host: host, Scope: "bytes", Kept: s.bytes, Max: s.lim.bytes}
	}
	if full != nil {
		s.mu.Unlock()
		return full
	}
	// Counted now, so a send racing this one sees the spool is not empty.
	s.perHost[host]++
	s.count++
	s.bytes += size
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	if s.db != nil {
		v, err := json.Marshal(spoolEntry{V: storeVersion, Host: host, ID: id, Data: data, At: s.clk.Now()})
		if err == nil {
			err = s.db.Batch(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketSpool)
				n, err := b.NextSequence()
				if err != nil {
					return err
				}
				seq = n
				return b.Put(seqKey(n), v)
			})
		}
		if err != nil {
			s.mu.Lock()
			s.uncount(host, size)
			s.mu.Unlock()
			return fmt.Errorf("federation: spool: %w: %v", message.ErrNotAccepted, err)
		}
		data = nil
	}
	s.mu.Lock()
	sp := spooled{seq: seq, host: host, id: id, size: size, data: data}
	i, _ := slices.BinarySearchFunc(s.queue, seq, func(e spooled, seq uint64) int { return cmpU64(e.seq, seq) })
	s.queue = slices.Insert(s.queue, i, sp)
	s.mu.Unlock()
	s.wake()
	return nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *spool) uncount(host string, size int64) {
	if s.perHost[host]--; s.perHost[host] <= 0 {
		delete(s.perHost, host)
	}
	s.count--
	s.bytes -= size
}

// first returns the oldest kept send with its data.
func (s *spool) first() (spooled, bool) {
	s.mu.Lock()
	if len(s.queue) == 0 {
		s.mu.Unlock()
		return spooled{}, false
	}
	sp := s.queue[0]
	s.mu.Unlock()
	if s.db == nil {
		return sp, true
	}
	// An entry that cannot be read comes back without data: it is
	// reported failed and removed, not retried for ever.
	_ = s.db.View(func(tx *bolt.Tx) error {
		var e spoolEntry
		if json.Unmarshal(tx.Bucket(bucketSpool).Get(seqKey(sp.seq)), &e) == nil && len(e.Data) > 0 {
			sp.data = e.Data
		}
		return nil
	})
	return sp, true
}

var errUnreadable = errors.New("federation: the spooled message could not be read back")

// remove forgets the kept send sp once the stream stored it.
func (s *spool) remove(sp spooled) error {
	if s.db != nil {
		if err := s.db.Batch(func(tx *bolt.Tx) error { return tx.Bucket(bucketSpool).Delete(seqKey(sp.seq)) }); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.IndexFunc(s.queue, func(e spooled) bool { return e.seq == sp.seq }); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
		s.uncount(sp.host, sp.size)
	}
	return nil
}

// flush publishes the kept sends, oldest first, one at a time (so each
// sender's stay in order), whenever the link is up, until Close. Each one
// stored is reported sent to its sender.
func (n *Node) flush() {
	defer n.done.Done()
	for {
		sp, ok := n.spool.first()
		if ok && n.nc.Status() == nats.CONNECTED {
			err := errUnreadable
			if sp.data != nil {
				// Signed again now (and at each retry past half the replay
				// window): signed when kept, it could be older than the
				// receivers' window.
				err = n.publish(n.ctx, inSubject(sp.host), sp.id, func() ([]byte, error) { return n.resign(sp.data) })
			}
			if err != nil && n.ctx.Err() != nil {
				return // closing: the send stays kept for the next start
			}
			if err != nil && !permanent(err) {
				n.log.Warn("federation kept send dropped: it does not read back", "msg_id", sp.id, "err", err)
			}
			if rerr := n.spool.remove(sp); rerr != nil {
				n.log.Warn("federation spool entry not removed", "msg_id", sp.id, "err", rerr)
			}
			rc := message.Receipt{MsgID: sp.id, Status: message.StatusSent, Time: n.now()}
			if err != nil {
				rc.Status, rc.Reason = message.StatusFailed, err.Error()
			} else {
				n.sent(n.ctx, sp.host)
			}
			n.leg.report(n.ctx, rc)
			continue
		}
		wait := time.Second // the link may be back without a word (a proxy that healed)
		if !ok {
			wait = time.Hour
		}
		again, t := clock.After(n.cfg.Clock, wait)
		select {
		case <-n.ctx.Done():
			t.Stop()
			return
		case <-n.spool.kick:
		case <-again:
		}
		t.Stop()
	}
}
