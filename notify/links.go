package notify

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
)

// An action link's token is base64url(JSON payload) "." base64url(HMAC-SHA256
// of the payload): the signature is the only authority it carries, so it
// needs no API token; its nonce is spent on first use.
const (
	// LinkTTL is how long an action link works.
	LinkTTL      = time.Hour
	maxSpent     = 4096 // spent nonces kept until their link expires
	maxTokenSize = 2048
)

// Action is what a link does.
type Action struct {
	Kind    string `json:"k"`           // "prompt" or "held"
	ID      string `json:"id"`          // the prompt's or held message's id
	Verb    string `json:"v"`           // allow, always (allow with the first suggestion), deny, answer (prompt); release, deny (held)
	Option  string `json:"o,omitempty"` // answer: the option label of Question
	Quest   string `json:"q,omitempty"` // answer: the question's text
	Expires int64  `json:"e"`
	Nonce   string `json:"n"`
}

// Why a link does nothing.
var (
	ErrForged  = errors.New("this link is not one the gateway signed")
	ErrExpired = errors.New("this link has expired")
	ErrUsed    = errors.New("this link was already used")
)

// Links signs and checks action links.
type Links struct {
	key   []byte
	clock clock.Clock
	mu    sync.Mutex
	spent map[string]time.Time // nonce -> its link's expiry
}

// NewLinks signs with key, or with a random key when it is empty (links
// then die with the process).
func NewLinks(key []byte, c clock.Clock) *Links {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	return &Links{key: key, clock: clock.Or(c), spent: map[string]time.Time{}}
}

func (l *Links) sign(b []byte) []byte {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte("gateway action link v1\n"))
	m.Write(b)
	return m.Sum(nil)
}

// Token signs a for LinkTTL from now.
func (l *Links) Token(a Action) string {
	n := make([]byte, 12)
	_, _ = rand.Read(n)
	a.Nonce, a.Expires = hex.EncodeToString(n), l.clock.Now().Add(LinkTTL).Unix()
	b, _ := json.Marshal(a)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(b) + "." + enc.EncodeToString(l.sign(b))
}

// Spend checks a token and spends its nonce: it returns the action once,
// and ErrUsed after.
func (l *Links) Spend(tok string) (Action, error) {
	var a Action
	body, sig, ok := strings.Cut(tok, ".")
	if !ok || len(tok) > maxTokenSize {
		return a, ErrForged
	}
	enc := base64.RawURLEncoding
	b, err1 := enc.DecodeString(body)
	s, err2 := enc.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(s, l.sign(b)) {
		return a, ErrForged
	}
	if err := json.Unmarshal(b, &a); err != nil || a.Nonce == "" {
		return a, ErrForged
	}
	now := l.clock.Now()
	exp := time.Unix(a.Expires, 0)
	if !now.Before(exp) {
		return a, ErrExpired
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, used := l.spent[a.Nonce]; used {
		return a, ErrUsed
	}
	if len(l.spent) >= maxSpent {
		for n, e := range l.spent {
			if !now.Before(e) {
				delete(l.spent, n)
			}
		}
		if len(l.spent) >= maxSpent {
			// Full of live links: refuse rather than forget one and let it replay.
			return a, errors.New("too many action links in use; answer from the console")
		}
	}
	l.spent[a.Nonce] = exp
	return a, nil
}
