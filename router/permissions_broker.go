package router

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/sessiongateway/gateway/message"
)

// Bounds of the permission broker.
const (
	// keepSettledPermissions is how many answered or withdrawn prompts stay
	// readable (and keep a late repeat of them from coming back as new).
	keepSettledPermissions = 256
	// maxPendingPermissions caps the pending list. A prompt beyond it is
	// refused rather than pushing out one someone may be reading.
	maxPendingPermissions = 1024
	// maxPendingPromptBytes and maxSettledPromptBytes cap what the two
	// hold (PermissionRequest.Bytes; a tool input can be 8 MiB, so counts
	// alone allow gigabytes): past the first a prompt is refused, as past
	// the count; past the second the oldest settled ones are forgotten.
	maxPendingPromptBytes = 64 << 20
	maxSettledPromptBytes = 16 << 20
)

// permBroker keeps one entry per (session, request id). Its zero value is
// ready to use.
type permBroker struct {
	mu      sync.Mutex
	byKey   map[permKey]*permEntry
	byID    map[string]*permEntry
	pending []*permEntry // arrival order
	settled []*permEntry // oldest first, at most keepSettledPermissions
	// pendingBytes and settledBytes are their entries' sizes' sums.
	pendingBytes, settledBytes int
}

type permKey struct{ session, request string }

type permEntry struct {
	key  permKey
	req  message.PermissionRequest
	size int // req.Bytes() when it was kept
	// turn holds a token while an answer is in flight, so a second answer
	// waits and then sees the first one's outcome: the leg is asked once.
	turn chan struct{}
}

// errTooManyPrompts refuses a prompt when the pending list is full.
var errTooManyPrompts = fmt.Errorf("%d prompts, or %d MiB of them, are already pending; answer some (it can still be answered on claude.ai)",
	maxPendingPermissions, maxPendingPromptBytes>>20)

// add keeps a new pending prompt; false, with no error, for one it already
// has. reraise is its leg's ReraisesCancelled: a prompt it withdrew may come
// back as new.
func (b *permBroker) add(req message.PermissionRequest, reraise bool) (message.PermissionRequest, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byKey == nil {
		b.byKey, b.byID = map[permKey]*permEntry{}, map[string]*permEntry{}
	}
	k := permKey{req.SessionID, req.RequestID}
	e, seen := b.byKey[k]
	if seen && !(reraise && e.req.State == message.PermissionCancelled) {
		// Raised again after a reconnect or replay, or already settled.
		return message.PermissionRequest{}, false, nil
	}
	size := req.Bytes()
	if len(b.pending) >= maxPendingPermissions || b.pendingBytes+size > maxPendingPromptBytes {
		return message.PermissionRequest{}, false, errTooManyPrompts
	}
	b.pendingBytes += size
	if seen {
		// Another host's prompt, withdrawn here when that host went
		// quiet, and listed pending by it again: its list is the truth.
		if i := slices.Index(b.settled, e); i >= 0 {
			b.settled = slices.Delete(b.settled, i, i+1)
			b.settledBytes -= e.size
		}
		req.ID, req.State, req.Answer = e.req.ID, message.PermissionPending, nil
		e.req, e.size = req, size
		b.pending = append(b.pending, e)
		return req, true, nil
	}
	req.ID = b.newID(k)
	req.State = message.PermissionPending
	req.Answer = nil
	e = &permEntry{key: k, req: req, size: size, turn: make(chan struct{}, 1)}
	b.byKey[k], b.byID[req.ID] = e, e
	b.pending = append(b.pending, e)
	return req, true, nil
}

// newID is "p" and 6 hex digits of the key's hash, more on a collision.
func (b *permBroker) newID(k permKey) string {
	sum := sha256.Sum256([]byte(k.session + "\x00" + k.request))
	h := hex.EncodeToString(sum[:])
	for n := 6; n <= len(h); n += 2 {
		if _, taken := b.byID["p"+h[:n]]; !taken {
			return "p" + h[:n]
		}
	}
	// Two keys with one sha256: not expected to happen, but never reuse an id.
	for i := 2; ; i++ {
		if id := fmt.Sprintf("p%s-%d", h, i); b.byID[id] == nil {
			return id
		}
	}
}

// cancel settles a pending prompt the leg says is over: withdrawn, or
// answered somewhere else.
func (b *permBroker) cancel(k permKey, st message.PermissionState, a *message.PermissionAnswer) (message.PermissionRequest, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.byKey[k]
	if !ok || e.req.State != message.PermissionPending {
		// Unknown (nothing to withdraw) or already settled: the first
		// settlement stands.
		return message.PermissionRequest{}, false
	}
	b.settleLocked(e, st, a)
	return e.req, true
}

// settleLocked moves a pending entry into the bounded history.
func (b *permBroker) settleLocked(e *permEntry, st message.PermissionState, a *message.PermissionAnswer) {
	e.req.State, e.req.Answer = st, a
	if a != nil {
		e.req.AnsweredBy = a.By
	}
	if i := slices.Index(b.pending, e); i >= 0 {
		b.pending = slices.Delete(b.pending, i, i+1)
		b.pendingBytes -= e.size
	}
	b.settled = append(b.settled, e)
	b.settledBytes += e.size
	for len(b.settled) > keepSettledPermissions || b.settledBytes > maxSettledPromptBytes && len(b.settled) > 1 {
		old := b.settled[0]
		b.settled = slices.Delete(b.settled, 0, 1)
		b.settledBytes -= old.size
		delete(b.byKey, old.key)
		delete(b.byID, old.req.ID)
	}
}

func (b *permBroker) get(id string) (*permEntry, message.PermissionRequest, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.byID[id]
	if !ok {
		return nil, message.PermissionRequest{}, fmt.Errorf("%w: %s", message.ErrNoPermission, id)
	}
	return e, e.req, nil
}

func sortByAge(es []*permEntry) []message.PermissionRequest {
	out := make([]message.PermissionRequest, len(es))
	for i, e := range es {
		out[i] = e.req
	}
	// Arrival order breaks ties: es is already in it.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}
