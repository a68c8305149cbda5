package federation

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// StoreFile is the federation's file in the state directory for the
// spool of sends kept while the link is down: each write is synced to
// disk before the send is answered, since it holds accepted messages.
const StoreFile = "federation.db"

// SettledFile holds the ids of the messages this host settled, so a
// message NATS offers again after a restart is answered, not delivered
// twice. It is written without a sync to disk: it guards against
// duplicates, not loss (NATS keeps every message until it is settled), and
// what a killed process wrote is in the kernel's cache all the same; only
// a machine that loses power may then deliver its last messages twice.
// A sync per message would cost each sender one disk flush per message.
const SettledFile = "federation-settled.db"

var (
	bucketSettled = []byte("settled")       // origin/id -> settledRecord
	bucketOrder   = []byte("settled-order") // seq -> origin/id, oldest first
	bucketSpool   = []byte("spool")         // seq -> spoolEntry, oldest first
)

// storeVersion is written into every record; one of another version is
// skipped (a newer gateway wrote it).
const storeVersion = 1

// batchDelay is how long a write waits for others to share its commit:
// every settle and spool write is one bbolt batch, one fsync for all of
// them, and a lane waits for it before writing its next message.
const batchDelay = 2 * time.Millisecond

// openStore opens (or creates) the store at dir/name: 0600 in a
// directory that passes safefile.CheckDir, never through a symlink.
// noSync leaves commits in the kernel's cache (see SettledFile).
func openStore(dir, name string, noSync bool) (*bolt.DB, error) {
	if err := safefile.EnsureDir(dir); err != nil {
		return nil, fmt.Errorf("federation: state dir: %w", err)
	}
	path := filepath.Join(dir, name)
	if err := safefile.CheckFile(path); err != nil {
		return nil, fmt.Errorf("federation: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, OpenFile: safefile.OpenPrivate, NoSync: noSync})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("federation: %s is in use by another process", path)
		}
		return nil, fmt.Errorf("federation: open %s: %w (move it aside to start without the settled ids and spooled sends it holds)", path, err)
	}
	db.MaxBatchDelay = batchDelay
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketSettled, bucketOrder, bucketSpool} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("federation: %s: %w", path, err)
	}
	return db, nil
}

func seqKey(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// openStore opens the state directory's store (memory only without one)
// and loads the settled ids and the spool from it.
func (n *Node) openStore() error {
	if n.cfg.StateDir != "" {
		db, err := openStore(n.cfg.StateDir, StoreFile, false)
		if err != nil {
			return err
		}
		n.db = db
		if n.settledDB, err = openStore(n.cfg.StateDir, SettledFile, true); err != nil {
			n.closeStore()
			return err
		}
	}
	var err error
	if n.settled, err = newSettled(n.settledDB, n.cfg.SettledCap, n.cfg.Clock); err == nil {
		n.spool, err = newSpool(n.db, n.cfg.spoolLimits(), n.cfg.Clock)
	}
	if err != nil {
		n.closeStore()
		return fmt.Errorf("federation: store: %w", err)
	}
	return nil
}

func (n *Node) closeStore() {
	for _, db := range []*bolt.DB{n.db, n.settledDB} {
		if db != nil {
			_ = db.Close()
		}
	}
}
