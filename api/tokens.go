package api

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
)

// API tokens beside the default one in <state-dir>/api-token: each has a
// label and scopes, is shown once when minted, and is kept only as a
// SHA-256, in <state-dir>/api-tokens.json (0600, written whole), like the
// Qwen controller grants. A running gateway re-reads the file on every
// request, so add and remove count at once.
const (
	// TokenPrefix starts every minted token, so Verify hashes only tokens
	// that look like ours.
	TokenPrefix      = "gwt_"
	maxAPITokens     = 64
	maxAPITokenLabel = 64
	maxAPITokensFile = 64 << 10
	apiTokensSchema  = 1
	// lastUsedEvery bounds how often a token's use is written back: at
	// most once a minute per token, not once a request.
	lastUsedEvery = time.Minute
)

// Errors of the token file.
var (
	ErrTokenLabel     = errors.New("a token label must be 1 to 64 printable characters")
	ErrTokenDuplicate = errors.New("a token with that label already exists")
	ErrTooManyTokens  = fmt.Errorf("the token file already holds %d tokens; remove one first", maxAPITokens)
	ErrTokensFile     = errors.New("the token file is not valid")
)

// TokenRecord is one token as stored: never the token, only its hash.
type TokenRecord struct {
	ID        string     `json:"id"`
	Label     string     `json:"label"`
	Scopes    string     `json:"scopes"`
	TokenHash string     `json:"tokenHash"`
	CreatedAt time.Time  `json:"createdAt"`
	LastUsed  *time.Time `json:"lastUsedAt,omitempty"`
}

type tokensFile struct {
	SchemaVersion int           `json:"schemaVersion"`
	Tokens        []TokenRecord `json:"tokens"`
}

// TokenFile is the token file; it implements TokenStore.
type TokenFile struct {
	path  string
	clock clock.Clock

	mu   sync.Mutex           // serialises this process's writes; the lock file, other processes'
	used map[string]time.Time // token id -> last use written back
}

// NewTokenFile is the token file of a state directory,
// <stateDir>/api-tokens.json; a nil clock is the real one.
func NewTokenFile(stateDir string, c clock.Clock) *TokenFile {
	return &TokenFile{path: filepath.Join(stateDir, "api-tokens.json"), clock: clock.Or(c), used: map[string]time.Time{}}
}

func hashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// List returns the records; a missing file holds none.
func (s *TokenFile) List() ([]TokenRecord, error) {
	b, err := safefile.ReadCapped(s.path, maxAPITokensFile)
	if errors.Is(err, fs.ErrNotExist) {
		return []TokenRecord{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("api tokens: %w", err)
	}
	var f tokensFile
	if err := json.Unmarshal(b, &f); err != nil || f.SchemaVersion != apiTokensSchema {
		return nil, fmt.Errorf("api tokens: %s: %w", s.path, ErrTokensFile)
	}
	return f.Tokens, nil
}

// update runs a read-modify-write under an exclusive lock on a lock file,
// so a CLI adding a token and a gateway noting a use do not lose each
// other's change.
func (s *TokenFile) update(fn func([]TokenRecord) ([]TokenRecord, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := safefile.EnsureDir(filepath.Dir(s.path)); err != nil {
		return err
	}
	unlock, err := safefile.Lock(s.path + ".lock")
	if err != nil {
		return fmt.Errorf("api tokens: %w", err)
	}
	defer unlock()
	recs, err := s.List()
	if err != nil {
		return err
	}
	recs, err = fn(recs)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(tokensFile{SchemaVersion: apiTokensSchema, Tokens: recs}, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteAtomic(s.path, append(b, '\n'))
}

func validTokenLabel(l string) bool {
	if l == "" || len([]rune(l)) > maxAPITokenLabel {
		return false
	}
	for _, r := range l {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Add mints a token with a label and scopes: the only time the token
// exists outside the program it is given to.
func (s *TokenFile) Add(label string, scopes Scopes) (Token, TokenRecord, error) {
	label = strings.TrimSpace(label)
	if !validTokenLabel(label) {
		return "", TokenRecord{}, ErrTokenLabel
	}
	raw := make([]byte, 32+4)
	if _, err := rand.Read(raw); err != nil {
		return "", TokenRecord{}, err
	}
	tok := TokenPrefix + hex.EncodeToString(raw[:32])
	rec := TokenRecord{ID: "t_" + hex.EncodeToString(raw[32:]), Label: label, Scopes: scopes.String(),
		TokenHash: hashToken(tok), CreatedAt: s.clock.Now().UTC().Truncate(time.Second)}
	err := s.update(func(recs []TokenRecord) ([]TokenRecord, error) {
		if len(recs) >= maxAPITokens {
			return nil, ErrTooManyTokens
		}
		for _, r := range recs {
			if strings.EqualFold(r.Label, label) {
				return nil, fmt.Errorf("%w: %q", ErrTokenDuplicate, label)
			}
			if r.ID == rec.ID {
				return nil, errors.New("api tokens: id collision, try again")
			}
		}
		return append(recs, rec), nil
	})
	if err != nil {
		return "", TokenRecord{}, err
	}
	return Token(tok), rec, nil
}

// Remove revokes the token with this id; ok is false when there is none.
func (s *TokenFile) Remove(id string) (removed TokenRecord, ok bool, err error) {
	id = strings.TrimSpace(id)
	err = s.update(func(recs []TokenRecord) ([]TokenRecord, error) {
		keep := recs[:0]
		for _, r := range recs {
			if strings.EqualFold(r.ID, id) {
				removed, ok = r, true
				continue
			}
			keep = append(keep, r)
		}
		return keep, nil
	})
	return removed, ok, err
}

// Verify resolves a presented token: only one that looks like ours is
// hashed, and the hash is compared with every record in constant time. A
// file that cannot be read grants nothing. A use is written back at most
// once a minute per token.
func (s *TokenFile) Verify(tok string) (Grant, bool) {
	if !strings.HasPrefix(tok, TokenPrefix) || len(tok) > 256 {
		return Grant{}, false
	}
	recs, err := s.List()
	if err != nil {
		return Grant{}, false
	}
	want := []byte(hashToken(tok))
	var match *TokenRecord
	for i := range recs {
		if subtle.ConstantTimeCompare([]byte(recs[i].TokenHash), want) == 1 {
			match = &recs[i]
		}
	}
	if match == nil {
		return Grant{}, false
	}
	scopes, err := ParseScopes(match.Scopes)
	if err != nil {
		return Grant{}, false // a hand-edited record grants nothing rather than guess
	}
	s.noteUse(match.ID)
	return Grant{ID: match.ID, Label: match.Label, Scopes: scopes}, true
}

func (s *TokenFile) noteUse(id string) {
	now := s.clock.Now().UTC().Truncate(time.Second)
	s.mu.Lock()
	last, seen := s.used[id]
	if seen && now.Sub(last) < lastUsedEvery {
		s.mu.Unlock()
		return
	}
	s.used[id] = now
	s.mu.Unlock()
	// Best effort: a failed write only leaves "last used" older.
	_ = s.update(func(recs []TokenRecord) ([]TokenRecord, error) {
		for i := range recs {
			if recs[i].ID == id {
				recs[i].LastUsed = &now
			}
		}
		return recs, nil
	})
}

// NewSecret is 32 random bytes in hex: the default token, a demo cloud's.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// DefaultToken reads <stateDir>/api-token, the token of every scope,
// creating it (0600, a NewSecret) on first start. Two gateways starting
// at once agree: the second reads what the first created.
func DefaultToken(stateDir string) (string, error) {
	path := filepath.Join(stateDir, "api-token")
	b, err := safefile.ReadCapped(path, 4096)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("api token: %w", err)
	}
	tok, err := NewSecret()
	if err != nil {
		return "", err
	}
	if err := safefile.CreateExclusive(path, []byte(tok+"\n")); err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	return tok, nil
}
