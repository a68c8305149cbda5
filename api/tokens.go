package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/sessiongateway/gateway/internal/safefile"

	"github.com/sessiongateway/gateway/api"
)

// API tokens beside the default one in <state-dir>/api-token: each has a
// label and scopes, is shown once when minted, and is kept only as a
// SHA-256, in <state-dir>/api-tokens.json (0600, written whole), like the
// Qwen controller grants. A running gateway re-reads the file on every
// request, so add and remove count at once.
const (
	apiTokenPrefix   = "gwt_"
	maxAPITokens     = 64
	maxAPITokenLabel = 64
	maxAPITokensFile = 64 << 10
	apiTokensSchema  = 1
	// lastUsedEvery bounds how often a token's use is written back: at
	// most once a minute per token, not once a request.
	lastUsedEvery = time.Minute
)

// Errors of the token store.
var (
	errTokenLabel     = errors.New("a token label must be 1 to 64 printable characters")
	errTokenDuplicate = errors.New("a token with that label already exists")
	errTooManyTokens  = fmt.Errorf("the token file already holds %d tokens; remove one first", maxAPITokens)
	errTokensFile     = errors.New("the token file is not valid")
)

// apiTokenRecord is one token as stored.
type apiTokenRecord struct {
	ID        string     `json:"id"`
	Label     string     `json:"label"`
	Scopes    string     `json:"scopes"`
	TokenHash string     `json:"tokenHash"`
	CreatedAt time.Time  `json:"createdAt"`
	LastUsed  *time.Time `json:"lastUsedAt,omitempty"`
}

type apiTokensFile struct {
	SchemaVersion int              `json:"schemaVersion"`
	Tokens        []apiTokenRecord `json:"tokens"`
}

// apiTokenStore is the file; it implements api.TokenStore.
type apiTokenStore struct {
	path string
	now  func() time.Time

	mu   sync.Mutex           // serialises this process's writes; the lock file, other processes'
	used map[string]time.Time // token id -> last use written back
}

func newAPITokenStore(stateDir string, now func() time.Time) *apiTokenStore {
	if now == nil {
		now = time.Now
	}
	return &apiTokenStore{path: filepath.Join(stateDir, "api-tokens.json"), now: now, used: map[string]time.Time{}}
}

func hashAPIToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// read returns the records; a missing file holds none.
func (s *apiTokenStore) read() ([]apiTokenRecord, error) {
	b, err := safefile.ReadCapped(s.path, maxAPITokensFile)
	if errors.Is(err, fs.ErrNotExist) {
		return []apiTokenRecord{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("api tokens: %w", err)
	}
	var f apiTokensFile
	if err := json.Unmarshal(b, &f); err != nil || f.SchemaVersion != apiTokensSchema {
		return nil, fmt.Errorf("api tokens: %s: %w", s.path, errTokensFile)
	}
	return f.Tokens, nil
}

// update runs a read-modify-write under an exclusive lock on a lock file,
// so a CLI adding a token and a gateway noting a use do not lose each
// other's change.
func (s *apiTokenStore) update(fn func([]apiTokenRecord) ([]apiTokenRecord, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := safefile.EnsureDir(filepath.Dir(s.path)); err != nil {
		return err
	}
	lf, err := os.OpenFile(s.path+".lock", os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("api tokens: %w", err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("api tokens: lock: %w", err)
	}
	recs, err := s.read()
	if err != nil {
		return err
	}
	recs, err = fn(recs)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(apiTokensFile{SchemaVersion: apiTokensSchema, Tokens: recs}, "", "  ")
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

// add mints a token: the only time it exists outside the program it is
// given to.
func (s *apiTokenStore) add(label string, scopes api.Scopes) (api.Token, apiTokenRecord, error) {
	label = strings.TrimSpace(label)
	if !validTokenLabel(label) {
		return "", apiTokenRecord{}, errTokenLabel
	}
	raw := make([]byte, 32+4)
	if _, err := rand.Read(raw); err != nil {
		return "", apiTokenRecord{}, err
	}
	tok := apiTokenPrefix + hex.EncodeToString(raw[:32])
	rec := apiTokenRecord{ID: "t_" + hex.EncodeToString(raw[32:]), Label: label, Scopes: scopes.String(),
		TokenHash: hashAPIToken(tok), CreatedAt: s.now().UTC().Truncate(time.Second)}
	err := s.update(func(recs []apiTokenRecord) ([]apiTokenRecord, error) {
		if len(recs) >= maxAPITokens {
			return nil, errTooManyTokens
		}
		for _, r := range recs {
			if strings.EqualFold(r.Label, label) {
				return nil, fmt.Errorf("%w: %q", errTokenDuplicate, label)
			}
			if r.ID == rec.ID {
				return nil, errors.New("api tokens: id collision, try again")
			}
		}
		return append(recs, rec), nil
	})
	if err != nil {
		return "", apiTokenRecord{}, err
	}
	return api.Token(tok), rec, nil
}

// remove revokes the token with this id; ok is false when there is none.
func (s *apiTokenStore) remove(id string) (removed apiTokenRecord, ok bool, err error) {
	id = strings.TrimSpace(id)
	err = s.update(func(recs []apiTokenRecord) ([]apiTokenRecord, error) {
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
func (s *apiTokenStore) Verify(tok string) (api.Grant, bool) {
	if !strings.HasPrefix(tok, apiTokenPrefix) || len(tok) > 256 {
		return api.Grant{}, false
	}
	recs, err := s.read()
	if err != nil {
		return api.Grant{}, false
	}
	want := []byte(hashAPIToken(tok))
	var match *apiTokenRecord
	for i := range recs {
		if subtle.ConstantTimeCompare([]byte(recs[i].TokenHash), want) == 1 {
			match = &recs[i]
		}
	}
	if match == nil {
		return api.Grant{}, false
	}
	scopes, err := api.ParseScopes(match.Scopes)
	if err != nil {
		return api.Grant{}, false // a hand-edited record grants nothing rather than guess
	}
	s.noteUse(match.ID)
	return api.Grant{ID: match.ID, Label: match.Label, Scopes: scopes}, true
}

func (s *apiTokenStore) noteUse(id string) {
	now := s.now().UTC().Truncate(time.Second)
	s.mu.Lock()
	last, seen := s.used[id]
	if seen && now.Sub(last) < lastUsedEvery {
		s.mu.Unlock()
		return
	}
	s.used[id] = now
	s.mu.Unlock()
	// Best effort: a failed write only leaves "last used" older.
	_ = s.update(func(recs []apiTokenRecord) ([]apiTokenRecord, error) {
		for i := range recs {
			if recs[i].ID == id {
				recs[i].LastUsed = &now
			}
		}
		return recs, nil
	})
}

// runTokens manages the API's bearer tokens. No running gateway is needed.
func runTokens(ctx context.Context, e *env, args []string) int {
	const use = "usage: gateway tokens add --label L [--scope read,send,approve] | list [--json] | remove ID"
	if len(args) == 0 {
		fmt.Fprintln(e.stderr, use)
		return exitUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlags(e, "tokens "+sub)
	sd := stateDirFlag(fs, e)
	label := fs.String("label", "", "label of the new token (add)")
	scope := fs.String("scope", "read", "comma-separated scopes of the new token: read (GETs, events), send (messages, idle), approve (permission prompts, held messages, control)")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	store := newAPITokenStore(*sd, nil)
	switch sub {
	case "add":
		if *label == "" || len(pos) != 0 {
			fmt.Fprintln(e.stderr, "usage: gateway tokens add --label L [--scope read,send,approve]")
			return exitUsage
		}
		scopes, err := api.ParseScopes(*scope)
		if err != nil {
			fmt.Fprintf(e.stderr, "gateway: --scope: %v\n", err)
			return exitUsage
		}
		tok, rec, err := store.add(*label, scopes)
		if err != nil {
			return fail(e, err)
		}
		if *asJSON {
			printJSON(e.stdout, map[string]string{"id": rec.ID, "label": rec.Label, "scopes": rec.Scopes, "token": string(tok)})
		} else {
			fmt.Fprintln(e.stdout, string(tok))
			fmt.Fprintf(e.stderr, "token %s (%s, scopes %s) added; it is shown only now\n", rec.ID, rec.Label, rec.Scopes)
		}
		return exitOK
	case "list":
		recs, err := store.read()
		if err != nil {
			return fail(e, err)
		}
		if *asJSON {
			out := make([]map[string]any, 0, len(recs))
			for _, r := range recs {
				m := map[string]any{"id": r.ID, "label": r.Label, "scopes": r.Scopes, "created_at": r.CreatedAt}
				if r.LastUsed != nil {
					m["last_used_at"] = *r.LastUsed
				}
				out = append(out, m)
			}
			printJSON(e.stdout, out)
			return exitOK
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tLABEL\tSCOPES\tCREATED\tLAST USED")
		for _, r := range recs {
			used := "never"
			if r.LastUsed != nil {
				used = r.LastUsed.Local().Format("2006-01-02 15:04")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Label, r.Scopes, r.CreatedAt.Local().Format("2006-01-02 15:04"), used)
		}
		tw.Flush()
		return exitOK
	case "remove":
		if len(pos) != 1 {
			fmt.Fprintln(e.stderr, "usage: gateway tokens remove ID")
			return exitUsage
		}
		rec, ok, err := store.remove(pos[0])
		if err != nil {
			return fail(e, err)
		}
		if !ok {
			fmt.Fprintf(e.stderr, "gateway: no token %q (see gateway tokens list)\n", pos[0])
			return exitError
		}
		fmt.Fprintf(e.stdout, "removed %s (%s)\n", rec.ID, rec.Label)
		return exitOK
	}
	fmt.Fprintf(e.stderr, "gateway: unknown tokens command %q (want add, list or remove)\n", sub)
	return exitUsage
}
