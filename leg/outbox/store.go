package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/message"
)

// FileName is the store's file in the state directory.
const FileName = "outbox.db"

// Defaults of Options.
const (
	DefaultMaxPending        = 10_000
	DefaultMaxPendingBytes   = 256 << 20
	DefaultKeepFinished      = 1_000
	DefaultKeepFinishedBytes = 32 << 20
)

// entryVersion is written into every entry; an entry of another version is
// not read (a newer gateway wrote it).
const entryVersion = 1

// maxIDLen bounds a key: bbolt takes 32 KiB, an id is a uuid.
const maxIDLen = 512

var bucketEntries = []byte("entries")

// Entry is one stored message and where its delivery stands.
type Entry struct {
	V           int                   `json:"v"`
	Seq         uint64                `json:"seq"` // acceptance order, across targets
	Message     message.Message       `json:"message"`
	Leg         message.Protocol      `json:"leg"`
	State       message.OutboxState   `json:"state"`
	AcceptedAt  time.Time             `json:"accepted_at"`
	Attempts    int                   `json:"attempts"`
	Refusals    int                   `json:"refusals,omitempty"` // permanent refusals in a row
	LastError   string                `json:"last_error,omitempty"`
	NextAttempt time.Time             `json:"next_attempt_at,omitzero"`
	FinishedAt  time.Time             `json:"finished_at,omitzero"`
	Failure     message.OutboxFailure `json:"failure,omitempty"`
	// Receipt is the receipt published when the entry was finished.
	Receipt *message.Receipt `json:"receipt,omitempty"`
	// Trace is the W3C trace context (traceparent, tracestate) of the
	// send that stored the entry, so every attempt, after a restart too,
	// posts within the routed message's trace.
	Trace map[string]string `json:"trace,omitempty"`
}

// decodeEntry reads a stored entry and checks what the store relies on.
func decodeEntry(key, v []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(v, &e); err != nil {
		return Entry{}, err
	}
	switch {
	case e.V != entryVersion:
		return Entry{}, fmt.Errorf("entry version %d, this gateway reads %d", e.V, entryVersion)
	case e.Message.ID != string(key):
		return Entry{}, fmt.Errorf("entry holds message %q", e.Message.ID)
	case e.State < message.OutboxPending || e.State > message.OutboxFailed:
		return Entry{}, fmt.Errorf("entry state %v", e.State)
	case e.Receipt != nil && !knownStatus(e.Receipt.Status):
		// A receipt with no status (or one this gateway does not know)
		// could not be written back as it was read.
		return Entry{}, fmt.Errorf("entry receipt has status %v", e.Receipt.Status)
	}
	return e, nil
}

// Options tunes a Store. Zero values take the defaults.
type Options struct {
	// MaxPending is how many pending entries the store takes; Add refuses
	// beyond it with a *FullError.
	MaxPending int
	// MaxPendingBytes is how many bytes the pending entries may take in
	// the file: a count alone lets 10,000 messages of a MiB each fill a
	// disk. Add refuses beyond it with a *FullError.
	MaxPendingBytes int64
	// KeepFinished is how many acked or failed entries are kept for
	// `gateway outbox --all`; older ones are deleted as new ones finish.
	KeepFinished int
	// KeepFinishedBytes bounds what the kept finished entries take in the
	// file, as MaxPendingBytes does for pending ones: a count alone would
	// keep a GiB of bodies. The newest finished entry is always kept.
	KeepFinishedBytes int64
	// LockTimeout bounds the wait for the file's lock (another process
	// has it open); default 1 s.
	LockTimeout time.Duration
	Now         func() time.Time
	Logger      *slog.Logger
}

// Store is the outbox file. It is safe for concurrent use.
type Store struct {
	path string
	db   *bolt.DB
	opts Options

	mu       sync.Mutex
	pending  int
	bytes    int64  // what the pending entries take, as stored
	finished []kept // finished entries, oldest first
	// finishedBytes is what the finished entries take in the file.
	finishedBytes int64
	writeErr      error // the last write's failure, nil once one succeeds
	// fault, set by tests only, fails writes before they reach the file.
	fault func() error
}

// Open opens or creates the store at path, 0600 in a directory that passes
// safefile.CheckDir. A symlink or anything but a regular file at path is refused.
func Open(path string, o Options) (*Store, error) {
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if o.KeepFinished <= 0 {
		o.KeepFinished = DefaultKeepFinished
	}
	if o.KeepFinishedBytes <= 0 {
		o.KeepFinishedBytes = DefaultKeepFinishedBytes
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if err := safefile.CheckDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	if err := safefile.CheckFile(path); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	db, err := openBolt(path, o.LockTimeout)
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("outbox: %s is in use by another process", path)
		}
		return nil, fmt.Errorf("outbox: open %s: %w (move it aside to start without the messages it holds)", path, err)
	}
	s := &Store{path: path, db: db, opts: o}
	if err := s.loadRecovering(); err != nil {
		db.Close()
		if errors.Is(err, ErrDamaged) {
			return nil, fmt.Errorf("outbox: %s: %w (move it aside to start without the messages it holds)", path, err)
		}
		return nil, fmt.Errorf("outbox: %s: %w", path, err)
	}
	return s, nil
}

// openBolt is bolt.Open, with its panics on a damaged file (a bad page's
// type or count, an invalid freelist) turned into an error. bbolt opens
// in the caller's goroutine, so recover here sees them; the file it had
// opened is closed, which also lets go of its lock.
func openBolt(path string, timeout time.Duration) (db *bolt.DB, err error) {
	var f *os.File
	defer func() {
		if p := recover(); p != nil {
			if f != nil {
				f.Close()
			}
			db, err = nil, fmt.Errorf("%w: %v", ErrDamaged, p)
		}
	}()
	return bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
		var err error
		f, err = safefile.OpenPrivate(name, flag, perm)
		return f, err
	}})
}

// loadRecovering is load, with bbolt's panics on a damaged page turned into
// an error; the transaction rolled back as the panic passed.
func (s *Store) loadRecovering() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrDamaged, p)
		}
	}()
	return s.load()
}

// load creates the bucket and counts what the file holds.
func (s *Store) load() error {
	type done struct {
		kept
		at time.Time
	}
	var finished []done
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketEntries)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			e, err := decodeEntry(k, v)
			if err != nil {
				// Left in the file for a person to look at, never delivered.
				s.opts.Logger.Warn("outbox entry unreadable; skipped", "id", string(k), "err", err)
				return nil
			}
			if e.State == message.OutboxPending {
				s.pending++
				s.bytes += int64(len(v))
			} else {
				finished = append(finished, done{kept{e.Message.ID, int64(len(v))}, e.FinishedAt})
			}
			return nil
		})
	})
	slices.SortStableFunc(finished, func(a, b done) int { return a.at.Compare(b.at) })
	for _, d := range finished {
		s.finished = append(s.finished, d.kept)
		s.finishedBytes += d.size
	}
	return err
}

// kept is a finished entry: its id and what it takes in the file.
type kept struct {
	id   string
	size int64
}

// prunable is how many of the oldest finished entries go when one of size
// more finishes, to stay within KeepFinished and KeepFinishedBytes; s.mu
// held.
func (s *Store) prunable(size int64) int {
	n := max(len(s.finished)+1-s.opts.KeepFinished, 0)
	bytes := s.finishedBytes + size
	for _, k := range s.finished[:n] {
		bytes -= k.size
	}
	for n < len(s.finished) && bytes > s.opts.KeepFinishedBytes {
		bytes -= s.finished[n].size
		n++
	}
	return n
}

// Path is the file's path.
func (s *Store) Path() string { return s.path }

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// noteWrite remembers whether the last write worked, for Err; s.mu held.
func (s *Store) noteWrite(err error) {
	if err == nil || errors.Is(err, ErrExists) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrNoID) || errors.Is(err, message.ErrOutboxFull) {
		s.writeErr = nil
		return
	}
	s.writeErr = err
}

// Err is the last write's failure, or a *FullError when the store is full;
// nil when it takes messages.
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writeErr != nil {
		return fmt.Errorf("cannot write %s: %w", s.path, s.writeErr)
	}
	if s.pending >= s.opts.MaxPending || s.bytes >= s.opts.MaxPendingBytes {
		return s.full()
	}
	return nil
}

// Len says how many entries are pending and how many finished are kept.
func (s *Store) Len() (pending, finished int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending, len(s.finished)
}

// Add stores e as a new pending entry, keyed by its message id, with the
// next sequence number and AcceptedAt now unless set; it returns the entry
// as stored.
// The write is synced to disk before Add returns.
func (s *Store) Add(e Entry) (Entry, error) {
	id := e.Message.ID
	if id == "" || len(id) > maxIDLen {
		return Entry{}, ErrNoID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending >= s.opts.MaxPending {
		return Entry{}, s.full()
	}
	var size int64
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEntries)
		if b.Get([]byte(id)) != nil {
			return fmt.Errorf("%w: %s", ErrExists, id)
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		e.V, e.Seq, e.State = entryVersion, seq, message.OutboxPending
		if e.AcceptedAt.IsZero() {
			e.AcceptedAt = s.opts.Now()
		}
		v, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if size = int64(len(v)); s.bytes+size > s.opts.MaxPendingBytes {
			return s.full()
		}
		return b.Put([]byte(id), v)
	})
	s.noteWrite(err)
	if err != nil {
		return Entry{}, err
	}
	s.pending++
	s.bytes += size
	return e, nil
}

// full is the *FullError refusing what comes now; s.mu held.
func (s *Store) full() *FullError {
	return &FullError{Pending: s.pending, Max: s.opts.MaxPending, Bytes: s.bytes, MaxBytes: s.opts.MaxPendingBytes}
}

// update runs one write transaction; s.mu held.
func (s *Store) update(f func(*bolt.Tx) error) error {
	if s.fault != nil {
		if err := s.fault(); err != nil {
			return err
		}
	}
	return s.db.Update(f)
}

// View runs fn in a read transaction of the file, for what else lives in
// it (the API's idempotency keys).
func (s *Store) View(fn func(*bolt.Tx) error) error { return s.db.View(fn) }

// Write runs fn in one synced write transaction of the file, in turn with
// the outbox's own; its failure counts in Err, as theirs do.
func (s *Store) Write(fn func(*bolt.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.update(fn)
	s.noteWrite(err)
	return err
}

// Get reads the entry of message id.
func (s *Store) Get(id string) (Entry, error) {
	var e Entry
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketEntries).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		var err error
		e, err = decodeEntry([]byte(id), v)
		return err
	})
	return e, err
}

// Update applies f to the entry of message id and writes it back; its
// message, sequence number and acceptance time stay as stored. An entry
// that f moves to a final state counts as finished, and the oldest
// finished entries beyond KeepFinished or KeepFinishedBytes are deleted in
// the same write. A
// finished entry is not changed again.
func (s *Store) Update(id string, f func(*Entry)) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		out      Entry
		finished bool
		drop     []kept
		size     int64 // the finished entry's, in the file
		grown    int64 // what the pending entries take more after the write
	)
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEntries)
		v := b.Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		old, err := decodeEntry([]byte(id), v)
		if err != nil {
			return err
		}
		if old.State.Final() {
			out = old
			return nil
		}
		e := old
		f(&e)
		e.V, e.Seq, e.Message, e.AcceptedAt, e.Leg = old.V, old.Seq, old.Message, old.AcceptedAt, old.Leg
		if !e.State.Final() {
			e.State = message.OutboxPending
		}
		nv, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if err := b.Put([]byte(id), nv); err != nil {
			return err
		}
		grown = int64(len(nv) - len(v))
		if finished = e.State.Final(); finished {
			grown, size = -int64(len(v)), int64(len(nv))
			drop = s.finished[:s.prunable(size)]
			for _, old := range drop {
				if err := b.Delete([]byte(old.id)); err != nil {
					return err
				}
			}
		}
		out = e
		return nil
	})
	s.noteWrite(err)
	if err != nil {
		return Entry{}, err
	}
	s.bytes += grown
	if finished {
		s.pending--
		for _, k := range drop {
			s.finishedBytes -= k.size
		}
		s.finished = append(s.finished[len(drop):], kept{id, size})
		s.finishedBytes += size
	}
	return out, nil
}

// List returns the pending entries in acceptance order; with all, the kept
// finished ones too.
func (s *Store) List(all bool) ([]Entry, error) {
	var out []Entry
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEntries).ForEach(func(k, v []byte) error {
			e, err := decodeEntry(k, v)
			if err != nil || (!all && e.State != message.OutboxPending) {
				return nil // unreadable entries were logged by Open
			}
			out = append(out, e)
			return nil
		})
	})
	slices.SortFunc(out, func(a, b Entry) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out, err
}

func knownStatus(s message.Status) bool {
	_, err := message.ParseStatus(s.String())
	return err == nil
}
