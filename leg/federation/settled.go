package federation

import (
	"encoding/json"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/sessiongateway/gateway/internal/bounded"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
)

// DefaultSettledCap is how many settled message ids a host keeps on disk
// (and in memory): the oldest are pruned beyond it. NATS offers a message
// again only while it is unacknowledged, so this is a window of the most
// recent messages, far wider than the consumer's pending cap.
const DefaultSettledCap = 1 << 16

// settledRecord is what became of one message from another host: a
// decisive receipt, or sent/queued when the local leg took it and its
// outcome is not known yet (it must not be written again).
type settledRecord struct {
	V       int             `json:"v"`
	Receipt message.Receipt `json:"receipt"`
}

// settled remembers, durably when it has a file, what became of the
// messages other hosts sent here, keyed origin/id. It is safe for
// concurrent use.
type settled struct {
	db    *bolt.DB // nil: memory only
	cap   int
	cache *bounded.Map[string, message.Receipt]
	clk   clock.Clock // stamps a receipt that has no time

	mu    sync.Mutex // serialises the count and pruning
	count int        // records in the file

	gmu        sync.Mutex    // guards the two below
	queue      []*pendingPut // puts waiting for the next commit
	committing bool          // a writer is committing
}

func newSettled(db *bolt.DB, limit int, clk clock.Clock) (*settled, error) {
	s := &settled{db: db, cap: limit, clk: clk, cache: bounded.NewMap[string, message.Receipt](limit)}
	if db == nil {
		return s, nil
	}
	err := db.View(func(tx *bolt.Tx) error {
		s.count = tx.Bucket(bucketSettled).Stats().KeyN
		return nil
	})
	return s, err
}

// decisive reports whether rc says what became of a message, rather than
// only that a leg took it.
func decisive(rc message.Receipt) bool {
	return rc.Status != 0 && rc.Status != message.StatusQueued && rc.Status != message.StatusSent
}

// get returns what became of key, from memory or the file.
func (s *settled) get(key string) (message.Receipt, bool) {
	if rc, ok := s.cache.Get(key); ok {
		return rc, true
	}
	if s.db == nil {
		return message.Receipt{}, false
	}
	var (
		rc    message.Receipt
		found bool
	)
	_ = s.db.View(func(tx *bolt.Tx) error {
		rc, found = decodeSettled(tx.Bucket(bucketSettled).Get([]byte(key)))
		return nil
	})
	if found {
		s.cache.Put(key, rc)
	}
	return rc, found
}

// decodeSettled reads a settled record as the file holds it; one that
// does not read (or of another version) is as good as none: at worst its
// message is delivered once more.
func decodeSettled(v []byte) (message.Receipt, bool) {
	var rec settledRecord
	if v == nil || json.Unmarshal(v, &rec) != nil || rec.V != storeVersion || rec.Receipt.Status == 0 {
		return message.Receipt{}, false
	}
	return rec.Receipt, true
}

// put records rc for key and returns once it is on disk. A decisive
// record is never replaced by a sent or queued one (a receipt relayed
// before the leg's Send returned); the oldest records beyond the cap are
// pruned after the write. Puts made at the same moment share one commit
// (see commit).
func (s *settled) put(key string, rc message.Receipt) error {
	return s.putAll([]keyedReceipt{{key, rc}})
}

// keyedReceipt is a record to put: what became of the message key.
type keyedReceipt struct {
	key string
	rc  message.Receipt
}

// putAll puts each of items, in order, in one commit.
func (s *settled) putAll(items []keyedReceipt) error {
	var ps []*pendingPut
	for _, it := range items {
		rc := it.rc
		if old, ok := s.cache.Get(it.key); ok && decisive(old) && !decisive(rc) {
			continue
		}
		if rc.Time.IsZero() {
			rc.Time = s.clk.Now()
		}
		if s.db == nil {
			s.cache.Put(it.key, rc)
			continue
		}
		v, err := json.Marshal(settledRecord{V: storeVersion, Receipt: rc})
		if err != nil {
			return err
		}
		ps = append(ps, &pendingPut{key: it.key, rc: rc, v: v, done: make(chan putResult, 1)})
	}
	if len(ps) == 0 {
		return nil
	}
	s.gmu.Lock()
	s.queue = append(s.queue, ps...)
	lead := !s.committing
	s.committing = true
	s.gmu.Unlock()
	if lead {
		s.commit()
	}
	var first error
	for _, p := range ps {
		res := <-p.done
		if res.lead {
			s.commit()
			res = <-p.done
		}
		if res.err != nil && first == nil {
			first = res.err
		}
	}
	return first
}

// pendingPut is a record waiting for its commit.
type pendingPut struct {
	key  string
	rc   message.Receipt
	v    []byte
	done chan putResult // one result, or the turn to commit
}

type putResult struct {
	err  error
	lead bool // this put's writer commits the queue now
}

// commit writes the queued records in one transaction and tells each
// its result. A writer that finds no commit under way commits what is
// queued then, and hands the turn to the first record queued meanwhile:
// a writer alone commits at once, and many share commits without a fixed
// wait (a lane waits for its record before writing its sender's next).
func (s *settled) commit() {
	s.gmu.Lock()
	batch := s.queue
	s.queue = nil
	s.gmu.Unlock()
	added := make([]bool, len(batch))
	kept := make([]message.Receipt, len(batch))
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, order := tx.Bucket(bucketSettled), tx.Bucket(bucketOrder)
		for i, q := range batch {
			added[i], kept[i] = false, q.rc
			if old := b.Get([]byte(q.key)); old != nil {
				var rec settledRecord
				if json.Unmarshal(old, &rec) == nil && decisive(rec.Receipt) && !decisive(q.rc) {
					kept[i] = rec.Receipt
					continue
				}
				if err := b.Put([]byte(q.key), q.v); err != nil {
					return err
				}
				continue
			}
			seq, err := order.NextSequence()
			if err != nil {
				return err
			}
			if err := order.Put(seqKey(seq), []byte(q.key)); err != nil {
				return err
			}
			if err := b.Put([]byte(q.key), q.v); err != nil {
				return err
			}
			added[i] = true
		}
		return nil
	})
	n := 0
	for i, q := range batch {
		if err == nil {
			s.cache.Put(q.key, kept[i])
			if added[i] {
				n++
			}
		}
		q.done <- putResult{err: err}
	}
	s.gmu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].done <- putResult{lead: true}
	} else {
		s.committing = false
	}
	s.gmu.Unlock()
	if n > 0 {
		s.mu.Lock()
		s.count += n
		over := s.count - s.cap
		s.mu.Unlock()
		if over > 0 {
			s.prune(over)
		}
	}
}

// prune deletes the n oldest records. Pruning in chunks keeps each write
// short; a record pruned while its message is offered again is at worst
// delivered once more, which the cap makes a matter of months, not
// seconds.
func (s *settled) prune(n int) {
	n = max(n, s.cap/64) // prune a chunk at a time, not one per put
	deleted := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		deleted = 0
		b, order := tx.Bucket(bucketSettled), tx.Bucket(bucketOrder)
		c := order.Cursor()
		for k, v := c.First(); k != nil && deleted < n; k, v = c.First() {
			if err := b.Delete(v); err != nil {
				return err
			}
			if err := c.Delete(); err != nil {
				return err
			}
			deleted++
		}
		return nil
	})
	if err == nil {
		s.mu.Lock()
		s.count -= deleted
		s.mu.Unlock()
	}
}
