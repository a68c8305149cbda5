package federation

import (
	"encoding/json"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sessiongateway/gateway/internal/bounded"
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

	mu    sync.Mutex // serialises the count and pruning
	count int        // records in the file
}

func newSettled(db *bolt.DB, limit int) (*settled, error) {
	s := &settled{db: db, cap: limit, cache: bounded.NewMap[string, message.Receipt](limit)}
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
// pruned in the same write.
func (s *settled) put(key string, rc message.Receipt) error {
	return s.write(key, rc, s.db.Update)
}

// putShared is put sharing its commit with puts made at the same moment
// (waiting up to the store's batch delay for them): for the outcomes
// settled side by side, where nothing waits on each one but its ack.
func (s *settled) putShared(key string, rc message.Receipt) error {
	return s.write(key, rc, s.db.Batch)
}

func (s *settled) write(key string, rc message.Receipt, commit func(func(*bolt.Tx) error) error) error {
	if old, ok := s.cache.Get(key); ok && decisive(old) && !decisive(rc) {
		return nil
	}
	if rc.Time.IsZero() {
		rc.Time = time.Now()
	}
	if s.db == nil {
		s.cache.Put(key, rc)
		return nil
	}
	v, err := json.Marshal(settledRecord{V: storeVersion, Receipt: rc})
	if err != nil {
		return err
	}
	added, kept := false, rc
	// A taken record is one commit of its own (the file is not synced,
	// see SettledFile, so a commit is cheap, and a lane may wait for it
	// before its next write); commit may run the function more than once.
	err = commit(func(tx *bolt.Tx) error {
		added, kept = false, rc
		b := tx.Bucket(bucketSettled)
		if old := b.Get([]byte(key)); old != nil {
			var rec settledRecord
			if json.Unmarshal(old, &rec) == nil && decisive(rec.Receipt) && !decisive(rc) {
				kept = rec.Receipt
				return nil
			}
			return b.Put([]byte(key), v)
		}
		order := tx.Bucket(bucketOrder)
		seq, err := order.NextSequence()
		if err != nil {
			return err
		}
		if err := order.Put(seqKey(seq), []byte(key)); err != nil {
			return err
		}
		added = true
		return b.Put([]byte(key), v)
	})
	if err != nil {
		return err
	}
	s.cache.Put(key, kept)
	if added {
		s.mu.Lock()
		s.count++
		over := s.count - s.cap
		s.mu.Unlock()
		if over > 0 {
			s.prune(over)
		}
	}
	return nil
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
