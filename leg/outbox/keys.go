package outbox

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sessiongateway/gateway/message"
)

var bucketKeys = []byte("idempotency-keys")

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

// Keys reads every stored idempotency key.
func (s *Store) Keys() ([]Key, error) {
	var out []Key
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeys)
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
	if k.Key == "" || len(k.Key) > maxIDLen {
		return fmt.Errorf("idempotency key of %d bytes", len(k.Key))
	}
	v, err := json.Marshal(k)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketKeys)
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
	s.noteWrite(err)
	return err
}

// DeleteKey forgets a key (its request sent nothing).
func (s *Store) DeleteKey(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.update(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketKeys); b != nil {
			return b.Delete([]byte(key))
		}
		return nil
	})
	s.noteWrite(err)
	return err
}
