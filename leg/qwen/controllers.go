package qwen

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/jsonx"
	"github.com/sessiongateway/gateway/internal/safefile"
)

// A controller grant is a token the user mints by hand and gives to one
// program they trust to drive their sessions. Qwen Code keeps its grants in
// $QWEN_HOME/peer-controllers.json; the gateway keeps its own, in the same
// format, in a file of its state directory. Only a SHA-256 of each token is
// stored: the token itself is shown once, when it is minted.
const (
	// ControllerTokenPrefix starts every controller token: qpc_<64 hex>.
	ControllerTokenPrefix = "qpc_"
	// MaxControllers is how many grants one file holds.
	MaxControllers = 32
	// MaxControllerLabelUnits caps a flattened label, in UTF-16 code units.
	MaxControllerLabelUnits = 40
	// MaxControllersBytes caps what is read of the file.
	MaxControllersBytes = 64 << 10

	controllersSchema      = 1
	maxPresentedTokenUnits = 256
)

// Controller is one grant.
type Controller struct {
	ID        string    // c_<8 hex>; what Remove takes
	Label     string    // flattened; unique, ignoring case
	TokenHash string    // lowercase hex SHA-256 of the token's UTF-8
	CreatedAt time.Time // millisecond precision
}

// Errors from the controller store.
var (
	ErrInvalidLabel       = errors.New("a controller label must be 1 to 40 characters once flattened to one line")
	ErrDuplicateLabel     = errors.New("a controller with that label already exists")
	ErrTooManyControllers = errors.New("the controller file already holds 32 grants; remove one first")
	ErrInvalidControllers = errors.New("the controller file is not valid")
)

// HashControllerToken is the stored form of a token.
func HashControllerToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func validControllerID(s string) bool {
	rest, ok := strings.CutPrefix(s, "c_")
	return ok && isHexToken(rest, 8)
}

type controllerWire struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	TokenHash string `json:"tokenHash"`
	CreatedAt int64  `json:"createdAt"`
}

type controllersWire struct {
	SchemaVersion int              `json:"schemaVersion"`
	Controllers   []controllerWire `json:"controllers"`
}

// ParseControllers reads a controller file: an object with schemaVersion 1
// and a controllers array. An entry is valid with an id c_<8 hex>, a
// tokenHash of 64 lowercase hex, a label that flattens to 1..40 UTF-16
// units (it is kept flattened) and a finite numeric createdAt. With
// skipMalformed an invalid entry is left out; without, it makes the whole
// file ErrInvalidControllers, as for a bad shape or version.
func ParseControllers(b []byte, skipMalformed bool) ([]Controller, error) {
	o, err := decodeObject(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidControllers, err)
	}
	if v, ok := o.num("schemaVersion"); !ok || v != controllersSchema {
		return nil, fmt.Errorf("%w: unsupported schemaVersion", ErrInvalidControllers)
	}
	if o.kind("controllers") != kindArray {
		return nil, fmt.Errorf("%w: no controllers array", ErrInvalidControllers)
	}
	var items []any
	if err := decodeArray(o["controllers"], &items); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidControllers, err)
	}
	out := []Controller{}
	for _, it := range items {
		c, ok := controllerOf(it)
		if !ok {
			if skipMalformed {
				continue
			}
			return nil, fmt.Errorf("%w: a malformed controller", ErrInvalidControllers)
		}
		out = append(out, c)
	}
	return out, nil
}

func controllerOf(v any) (Controller, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return Controller{}, false
	}
	id, _ := m["id"].(string)
	hash, _ := m["tokenHash"].(string)
	label, okLabel := m["label"].(string)
	created, okCreated := jsNumber(m["createdAt"])
	if !validControllerID(id) || !isHexToken(hash, 64) || !okLabel || !okCreated {
		return Controller{}, false
	}
	label = FlattenLabel(label)
	if label == "" || utf16Len(label) > MaxControllerLabelUnits || math.IsInf(created, 0) {
		return Controller{}, false
	}
	return Controller{ID: id, Label: label, TokenHash: hash, CreatedAt: time.UnixMilli(clampMillis(created))}, true
}

// MarshalControllers lays a controller file out as Qwen Code writes it.
func MarshalControllers(cs []Controller) ([]byte, error) {
	w := controllersWire{SchemaVersion: controllersSchema, Controllers: []controllerWire{}}
	for _, c := range cs {
		w.Controllers = append(w.Controllers, controllerWire{ID: c.ID, Label: c.Label, TokenHash: c.TokenHash, CreatedAt: c.CreatedAt.UnixMilli()})
	}
	return jsonx.MarshalIndent(w, "  ")
}

// Controllers is a controller file: the gateway's own store, or, read-only
// (Verify and List alone), Qwen Code's $QWEN_HOME/peer-controllers.json,
// which Qwen Code writes under a lock file of its own that this does not
// take. Each call reads the file afresh, so a grant added or removed by
// another process counts from the next connection. It is safe for
// concurrent use within one process.
type Controllers struct {
	path string
	clk  clock.Clock
	mu   sync.Mutex // serialises read-modify-write
}

// NewControllers opens the store at path. Nothing is read until used.
func NewControllers(path string, clk clock.Clock) *Controllers {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Controllers{path: path, clk: clk}
}

// Path is the file's path.
func (c *Controllers) Path() string { return c.path }

// read returns the grants; a missing file holds none.
func (c *Controllers) read(skipMalformed bool) ([]Controller, error) {
	b, err := safefile.ReadCapped(c.path, MaxControllersBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return []Controller{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("controllers: %w", err)
	}
	cs, err := ParseControllers(b, skipMalformed)
	if err != nil {
		return nil, fmt.Errorf("controllers: %s: %w", c.path, err)
	}
	return cs, nil
}

func (c *Controllers) write(cs []Controller) error {
	b, err := MarshalControllers(cs)
	if err != nil {
		return err
	}
	if err := safefile.EnsureDir(filepath.Dir(c.path)); err != nil {
		return err
	}
	return safefile.WriteAtomic(c.path, b)
}

// Add mints a grant labelled label and returns its token, qpc_<64 hex>:
// the only time the token exists outside the program it is given to. The
// file keeps its hash. The file is written whole, 0600, in a 0700
// directory. A file with a malformed grant is not modified.
func (c *Controllers) Add(label string) (Token, Controller, error) {
	flat := FlattenLabel(label)
	if flat == "" || utf16Len(flat) > MaxControllerLabelUnits {
		return "", Controller{}, ErrInvalidLabel
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, err := c.read(false)
	if err != nil {
		return "", Controller{}, err
	}
	taken := map[string]bool{}
	for _, x := range cs {
		if strings.EqualFold(x.Label, flat) {
			return "", Controller{}, fmt.Errorf("%w: %q", ErrDuplicateLabel, flat)
		}
		taken[x.ID] = true
	}
	if len(cs) >= MaxControllers {
		return "", Controller{}, ErrTooManyControllers
	}
	id := "c_" + randomHex(4)
	for taken[id] {
		id = "c_" + randomHex(4)
	}
	tok := Token(ControllerTokenPrefix + randomHex(tokenBytes))
	rec := Controller{ID: id, Label: flat, TokenHash: HashControllerToken(string(tok)), CreatedAt: time.UnixMilli(c.clk.Now().UnixMilli())}
	if err := c.write(append(cs, rec)); err != nil {
		return "", Controller{}, err
	}
	return tok, rec, nil
}

// List returns the valid grants, malformed ones left out. A file that is
// not a controller file at all is an error.
func (c *Controllers) List() ([]Controller, error) { return c.read(true) }

// Remove revokes the grant with this id (case and surrounding space
// ignored). ok is false when there is none. Malformed grants are dropped
// from the file on the way.
func (c *Controllers) Remove(id string) (removed Controller, ok bool, err error) {
	needle := strings.ToLower(jsTrim(id))
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, err := c.read(true)
	if err != nil {
		return Controller{}, false, err
	}
	for _, x := range cs {
		if strings.ToLower(x.ID) == needle {
			removed, ok = x, true
			break
		}
	}
	if !ok {
		return Controller{}, false, nil
	}
	keep := cs[:0]
	for _, x := range cs {
		if x.TokenHash != removed.TokenHash {
			keep = append(keep, x)
		}
	}
	return removed, true, c.write(keep)
}

// Verify resolves a presented token to its grant. Only a token that looks
// like one (qpc_ prefix, at most 256 characters) is hashed, and its hash is
// compared with every grant's in constant time. A file that cannot be read
// or parsed grants nothing.
func (c *Controllers) Verify(token string) (Controller, bool) {
	if !strings.HasPrefix(token, ControllerTokenPrefix) || utf16Len(token) > maxPresentedTokenUnits {
		return Controller{}, false
	}
	cs, err := c.read(true)
	if err != nil {
		return Controller{}, false
	}
	want := []byte(HashControllerToken(token))
	var match Controller
	found := false
	for _, x := range cs {
		if subtle.ConstantTimeCompare([]byte(x.TokenHash), want) == 1 {
			match, found = x, true
		}
	}
	return match, found
}
