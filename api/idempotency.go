package api

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/idempotency"
	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/message"
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
	// ForgottenHeader is set to "true" on a replayed answer for a message
	// the gateway no longer tracks (a restart, or many sends since): its
	// status is the one the first request was answered with, and nothing
	// was sent again.
	ForgottenHeader = "Idempotent-Forgotten"
	// MaxIdempotencyKeys bounds the keys remembered; the oldest go first.
	MaxIdempotencyKeys = 10_000
	// IdempotencyWindow is how long a key is remembered.
	IdempotencyWindow = 24 * time.Hour
	// maxKeyLen bounds a key: a uuid or a client's own id fits.
	maxKeyLen = 255
)

// KeyStore keeps idempotency keys on disk (an idempotency.Store), so a retry
// after a restart finds the message its first attempt sent. Without one
// they live as long as the process.
type KeyStore interface {
	Keys() ([]idempotency.Key, error)
	PutKey(k idempotency.Key, drop []string) error
	DeleteKey(key string) error
}

var (
	errKeyMismatch = errors.New("this Idempotency-Key was used with a different request body")
	errKeyBusy     = errors.New("a request with this Idempotency-Key is still under way")
)

// keyTable is the keys in memory, oldest first, written through to the
// KeyStore when there is one. Keys are evicted only to make room for the
// key of a send that was accepted (a refused send's key is released), and
// the grant holding the most keys loses its oldest first: one client
// cannot push out another's keys while it holds fewer than they do, so
// each grant keeps at least an even share of the table.
type keyTable struct {
	store KeyStore
	clk   clock.Clock
	max   int // MaxIdempotencyKeys

	mu     sync.Mutex
	loaded bool
	keys   map[string]*idemKey
	order  []string       // oldest first
	count  map[string]int // keys held, by grant
}

type idemKey struct {
	idempotency.Key
	grant string
	busy  bool // its request is under way
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

// tableKey is a grant's key in the table: one client's keys are not
// another's. A key has no spaces, so the last one ends the grant.
func tableKey(grant, key string) string { return grant + " " + key }

func grantOf(tableKey string) string {
	return tableKey[:max(strings.LastIndexByte(tableKey, ' '), 0)]
}

// load reads the stored keys once; t.mu held.
func (t *keyTable) load() error {
	if t.loaded {
		return nil
	}
	t.keys, t.count = map[string]*idemKey{}, map[string]int{}
	if t.store != nil {
		stored, err := t.store.Keys()
		if err != nil {
			return fmt.Errorf("reading idempotency keys: %w", err)
		}
		slices.SortFunc(stored, func(a, b idempotency.Key) int { return a.Created.Compare(b.Created) })
		for _, k := range stored {
			t.add(&idemKey{Key: k, grant: grantOf(k.Key)})
		}
		// Beyond the cap (a smaller cap than the file's), the largest
		// grants' oldest go.
		for _, d := range t.evict() {
			_ = t.store.DeleteKey(d)
		}
	}
	t.loaded = true
	return nil
}

// add puts k in the table as its newest key; t.mu held.
func (t *keyTable) add(k *idemKey) {
	t.keys[k.Key.Key] = k
	t.order = append(t.order, k.Key.Key)
	t.count[k.grant]++
}

// claim finds the key of grant or makes it, for a request with this
// digest. A new key (fresh) is on disk before claim returns, and the
// request sends its message under k.MsgID; a known key answers what it
// stored, and its request sends nothing, unless the key was never
// answered (then it sends again under the stored id, as fresh).
func (t *keyTable) claim(grant, key, dig string) (k idempotency.Key, fresh bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.load(); err != nil {
		return idempotency.Key{}, false, err
	}
	now := t.clk.Now()
	t.expire(now)
	key = tableKey(grant, key)
	if k, ok := t.keys[key]; ok {
		switch {
		case k.Digest != dig:
			return idempotency.Key{}, false, errKeyMismatch
		case k.busy:
			return idempotency.Key{}, false, errKeyBusy
		case k.Status == 0:
			// Stored by a claim whose send was never answered: the gateway
			// stopped mid-send, or a refused send's key could not be
			// deleted. Nothing says the message was taken, so it is sent
			// again under its stored id, which the router and the outbox
			// de-duplicate: at least once, never lost.
			k.busy = true
			return k.Key, true, nil
		}
		return k.Key, false, nil
	}
	nk := &idemKey{Key: idempotency.Key{Key: key, Digest: dig, MsgID: uuid.NewString(), Created: now}, grant: grant, busy: true}
	if t.store != nil {
		if err := t.store.PutKey(nk.Key, nil); err != nil {
			return idempotency.Key{}, false, fmt.Errorf("%w: storing the idempotency key: %w", message.ErrNotAccepted, err)
		}
	}
	t.add(nk)
	return nk.Key, true, nil
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

// evict drops, while the table holds more than its cap, the oldest idle
// key of the grant holding the most, and returns what it dropped; t.mu
// held.
func (t *keyTable) evict() []string {
	var out []string
	for len(t.keys) > t.max {
		var biggest string
		for g, n := range t.count {
			if n > t.count[biggest] || n == t.count[biggest] && g < biggest {
				biggest = g
			}
		}
		i := slices.IndexFunc(t.order, func(k string) bool { return t.keys[k].grant == biggest && !t.keys[k].busy })
		if i < 0 {
			break // all its keys are under way: the table shrinks as they end
		}
		out = append(out, t.order[i])
		t.drop([]string{t.order[i]})
	}
	return out
}

// drop removes the keys named from memory; t.mu held.
func (t *keyTable) drop(drop []string) {
	gone := make(map[string]bool, len(drop))
	for _, d := range drop {
		if k, ok := t.keys[d]; ok {
			gone[d] = true
			if t.count[k.grant]--; t.count[k.grant] <= 0 {
				delete(t.count, k.grant)
			}
			delete(t.keys, d)
		}
	}
	t.order = slices.DeleteFunc(t.order, func(k string) bool { return gone[k] })
}

// done ends a fresh key's claim. A request that sent nothing (refused, or
// its message not accepted) releases the key, so the same request may try
// again. An accepted one keeps it with where the message went and stood,
// to answer a retry after the router forgot the message; only now may it
// push older keys out.
func (t *keyTable) done(grant, key string, out router.Outbound, sent bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key = tableKey(grant, key)
	k, ok := t.keys[key]
	if !ok {
		return
	}
	k.busy = false
	if !sent {
		t.drop([]string{key})
		if t.store != nil {
			_ = t.store.DeleteKey(key)
		}
		return
	}
	m := out.Message
	k.To, k.ToName, k.Protocol, k.Status = m.To, m.ToName, m.Protocol, cmp.Or(out.Status, message.StatusQueued)
	drop := t.evict()
	if t.store != nil {
		// Best effort: without it, a retry after a restart still finds the
		// message id stored by claim.
		_ = t.store.PutKey(k.Key, drop)
	}
}
