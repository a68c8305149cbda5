package idempotency

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sessiongateway/gateway/message"
)

// bucket is where the keys live in the file; the name is the one the
// outbox's store gave it, so an upgraded gateway reads the keys it wrote.
var bucket = []byte("idempotency-keys")

// maxKeyLen bounds a stored key: bbolt takes 32 KiB, the API's keys are
// a grant and at most 255 bytes.
const maxKeyLen = 512

// Key is one idempotency key of the control API (POST /v1/messages): the
// message a request with it was sent as, and a digest of that request, so
// a retry after a restart finds the message rather than sending another.
type Key struct {
	Key     string    `json:"key"`
	Digest  string    `json:"digest"`
	MsgID   string    `json:"msg_id"`
	Created time.Time `json:"created"`
	// Where the message went and where it stood when its send answered:
	// a retry after the gateway forgot the message is answered from these
	// (and nothing is sent again).
	To       string           `json:"to,omitempty"`
	ToName   string           `json:"to_name,omitempty"`
	Protocol message.Protocol `json:"protocol,omitempty"`
	Status   message.Status   `json:"status,omitempty"`
}

// File is the bbolt file the keys live in. Its owner (the outbox's
// store) serializes Write with its own writes, syncs each one and counts
// its failure as the file's.
type File interface {
	View(fn func(*bolt.Tx) error) error
	Write(fn func(*bolt.Tx) error) error
}

// Store keeps keys in the bucket of a File.
type Store struct {
	file File
}

// NewStore keeps keys in f.
func NewStore(f File) *Store { return &Store{file: f} }

// Keys reads every stored key; an unreadable one is left out (forgotten).
func (s *Store) Keys() ([]Key, error) {
	var out []Key
	err := s.file.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var key Key
			if json.Unmarshal(v, &key) != nil || key.Key != string(k) {
				return nil // unreadable: forgotten
			}
			out = append(out, key)
			return nil
		})
	})
	return out, err
}

// PutKey stores k and deletes the keys named in drop (expired or beyond
// the caller's cap) in the same synced write.
func (s *Store) PutKey(k Key, drop []string) error {
	if k.Key == "" || len(k.Key) > maxKeyLen {
		return fmt.Errorf("idempotency key of %d bytes", len(k.Key))
	}
	v, err := json.Marshal(k)
	if err != nil {
		return err
	}
	return s.file.Write(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		for _, d := range drop {
			if err := b.Delete([]byte(d)); err != nil {
				return err
			}
		}
		return b.Put([]byte(k.Key), v)
	})
}

// DeleteKey forgets a key (its request sent nothing).
func (s *Store) DeleteKey(key string) error {
	return s.file.Write(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucket); b != nil {
			return b.Delete([]byte(key))
		}
		return nil
	})
}
