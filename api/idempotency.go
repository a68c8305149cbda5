package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/outbox"
	"github.com/sessiongateway/gateway/router"
)

// Idempotency keys on POST /v1/messages: a request repeated with the same
// Idempotency-Key (and the same body) within IdempotencyWindow answers the
// message the first one sent and sends nothing again.
const (
	IdempotencyHeader = "Idempotency-Key"
	// ReplayedHeader is set to "true" on an answer that repeats an
	// earlier request's message.
	ReplayedHeader = "Idempotent-Replayed"
	// MaxIdempotencyKeys bounds the keys remembered; the oldest go first.
	MaxIdempotencyKeys = 10_000
	// IdempotencyWindow is how long a key is remembered.
	IdempotencyWindow = 24 * time.Hour
	// maxKeyLen bounds a key: a uuid or a client's own id fits.
	maxKeyLen = 255
)

// KeyStore keeps idempotency keys on disk (the outbox's file), so a retry
// after a restart finds the message its first attempt sent. Without one
// they live as long as the process.
type KeyStore interface {
	Keys() ([]outbox.Key, error)
	PutKey(k outbox.Key, drop []string) error
	DeleteKey(key string) error
}

var (
	errKeyMismatch = errors.New("this Idempotency-Key was used with a different request body")
	errKeyBusy     = errors.New("a request with this Idempotency-Key is still under way")
)

// keyTable is the keys in memory, oldest first, written through to the
// KeyStore when there is one.
type keyTable struct {
	store KeyStore
	clk   clock.Clock
	max   int // MaxIdempotencyKeys

	mu     sync.Mutex
	loaded bool
	keys   map[string]*idemKey
	order  []string // oldest first
}

type idemKey struct {
	outbox.Key
	busy bool // its request is under way
}

// validKey accepts 1 to maxKeyLen printable ASCII characters.
func validKey(k string) bool {
	if k == "" || len(k) > maxKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// digest is what makes two sends the same request: what is sent, not how
// long the caller waits for it. b.Body is the text whichever spelling
// carried it; the field keeps the name Text so stored digests still match.
func digest(b SendBody) string {
	v, _ := json.Marshal(struct {
		To, Text, Mode, FromName string
		Files                    []string
		Unpaced                  bool
	}{b.To, b.Body, b.Mode, b.FromName, b.Files, b.Unpaced})
	sum := sha256.Sum256(v)
	return hex.EncodeToString(sum[:])
}

// load reads the stored keys once; t.mu held.
func (t *keyTable) load() error {
	if t.loaded {
		return nil
	}
	t.keys = map[string]*idemKey{}
	if t.store != nil {
		stored, err := t.store.Keys()
		if err != nil {
			return fmt.Errorf("reading idempotency keys: %w", err)
		}
		slices.SortFunc(stored, func(a, b outbox.Key) int { return a.Created.Compare(b.Created) })
		for _, k := range stored {
			t.keys[k.Key] = &idemKey{Key: k}
			t.order = append(t.order, k.Key)
		}
		// Beyond the cap (a smaller cap than the file's), the oldest go.
		if n := len(t.order) - t.max; n > 0 {
			t.drop(slices.Clone(t.order[:n]))
		}
	}
	t.loaded = true
	return nil
}

// claim finds key or makes it, for a request with this digest: the message
// id to send under, and whether the key is new (a request sent under a
// known key sends nothing new). A new key is on disk before claim returns.
func (t *keyTable) claim(key, dig string) (msgID string, fresh bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.load(); err != nil {
		return "", false, err
	}
	now := t.clk.Now()
	t.expire(now)
	if k, ok := t.keys[key]; ok {
		switch {
		case k.Digest != dig:
			return "", false, errKeyMismatch
		case k.busy:
			return "", false, errKeyBusy
		}
		k.busy = true
		return k.MsgID, false, nil
	}
	var drop []string // the oldest, beyond the cap
	for len(t.order)-len(drop) >= t.max {
		drop = append(drop, t.order[len(drop)])
	}
	k := &idemKey{Key: outbox.Key{Key: key, Digest: dig, MsgID: uuid.NewString(), Created: now}, busy: true}
	if t.store != nil {
		if err := t.store.PutKey(k.Key, drop); err != nil {
			return "", false, fmt.Errorf("%w: storing the idempotency key: %w", router.ErrNotAccepted, err)
		}
	}
	t.drop(drop)
	t.keys[key] = k
	t.order = append(t.order, key)
	return k.MsgID, true, nil
}

// expire forgets the keys older than the window, in memory and (best
// effort: a key left there is dropped at the next start's read) on disk;
// t.mu held.
func (t *keyTable) expire(now time.Time) {
	n := 0
	for n < len(t.order) && now.Sub(t.keys[t.order[n]].Created) > IdempotencyWindow {
		n++
	}
	if n == 0 {
		return
	}
	old := slices.Clone(t.order[:n])
	t.drop(old)
	if t.store != nil {
		for _, d := range old {
			_ = t.store.DeleteKey(d)
		}
	}
}

// drop removes the oldest len(drop) keys from memory; t.mu held.
func (t *keyTable) drop(drop []string) {
	for _, d := range drop {
		delete(t.keys, d)
	}
	t.order = t.order[len(drop):]
}

// done ends a claim. A request that sent nothing (refused, or its message
// not accepted) releases a fresh key, so the same request may try again.
func (t *keyTable) done(key string, fresh, sent bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k, ok := t.keys[key]
	if !ok {
		return
	}
	k.busy = false
	if sent || !fresh {
		return
	}
	delete(t.keys, key)
	if i := slices.Index(t.order, key); i >= 0 {
		t.order = slices.Delete(t.order, i, i+1)
	}
	if t.store != nil {
		_ = t.store.DeleteKey(key)
	}
}
