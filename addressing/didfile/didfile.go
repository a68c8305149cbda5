package didfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/sessiongateway/gateway/addressing"
	"github.com/sessiongateway/gateway/internal/bounded"
)

// MaxSize caps the file: a map of DIDs to addresses is small, and a reader
// of a file others may have touched must not be made to swallow a disk.
const MaxSize = 1 << 20

// Reason says why a DID file was refused. Its wire spelling and the sentence
// a user reads are in one table, reasons.
type Reason uint8

const (
	ReasonSymlink    Reason = iota + 1 // the path is a symbolic link
	ReasonNotRegular                   // a directory, device, FIFO or socket
	ReasonWritable                     // group or others may write it
	ReasonChanged                      // replaced between the check and the read
	ReasonTooLarge                     // over MaxSize
	ReasonSyntax                       // not one JSON object of strings
	ReasonDuplicate                    // a DID appears twice
	ReasonKey                          // a key is not a canonical did: address
	ReasonValue                        // a value is not an address
	ReasonDIDValue                     // a value is a did: address
)

var reasons = [...]struct{ wire, text string }{
	ReasonSymlink:    {"symlink", "it is a symbolic link; point --did-file at the file itself"},
	ReasonNotRegular: {"not-regular", "it is not a regular file"},
	ReasonWritable:   {"writable", "group or others can write it; chmod go-w it"},
	ReasonChanged:    {"changed", "it was replaced while being read; try again"},
	ReasonTooLarge:   {"too-large", "it is larger than 1 MiB"},
	ReasonSyntax:     {"syntax", `it must be one JSON object mapping each DID to an address, as {"did:web:example.com:alice": "work-08"}`},
	ReasonDuplicate:  {"duplicate", "a DID is listed twice"},
	ReasonKey:        {"key", "a key is not a did:METHOD:ID address in canonical form"},
	ReasonValue:      {"value", "a value is not an address (a session name, name [ref], [ref], uds:/path or bridge:ID)"},
	ReasonDIDValue:   {"did-value", "a value is another did:, which would need resolving again; give the address it stands for"},
}

// String is the wire spelling, for logs and error codes.
func (r Reason) String() string {
	if r == 0 || int(r) >= len(reasons) {
		return "Reason(" + strconv.Itoa(int(r)) + ")"
	}
	return reasons[r].wire
}

func (r Reason) text() string {
	if r == 0 || int(r) >= len(reasons) {
		return "it is invalid"
	}
	return reasons[r].text
}

// FileError is a DID file that was refused, and why. File is empty for
// bytes given to Parse; Key is the entry at fault, when one is.
type FileError struct {
	File   string
	Reason Reason
	Key    string
	Err    error // the underlying error (a JSON or address parse error), if any
}

func (e *FileError) Error() string {
	var b bytes.Buffer
	b.WriteString("did file")
	if e.File != "" {
		b.WriteString(" " + e.File)
	}
	b.WriteString(": " + e.Reason.text())
	if e.Key != "" {
		fmt.Fprintf(&b, " (entry %q)", clip(e.Key))
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *FileError) Unwrap() error { return e.Err }

func clip(s string) string { return bounded.Clip(s, 80) }

// UnknownDIDError is a did: address the file does not list. It unwraps to an
// addressing.NotFoundError, so callers that map "no such session" (the
// control API's 404) treat it the same way.
type UnknownDIDError struct {
	DID  string
	File string
}

func (e *UnknownDIDError) Error() string {
	return fmt.Sprintf("%s is not listed in the did file %s; add \"%s\": \"<address>\" there, or address the session by name, [ref] or uds: path",
		clip(e.DID), e.File, clip(e.DID))
}

func (e *UnknownDIDError) Unwrap() error {
	return &addressing.NotFoundError{Kind: addressing.KindDID, Query: e.DID}
}

// ErrNotDID is returned by ResolveDID for an address of another kind.
var ErrNotDID = errors.New("not a did: address")

// Resolver is an addressing.DIDResolver backed by a DID file. It checks the
// file on every resolution and reads it again when its size, modification
// time or identity (an editor's rename) changed. While the file is missing
// or invalid every resolution fails with that error: an address book is
// never half applied, nor replaced by an older copy. A Resolver is safe for
// concurrent use and starts no goroutine.
type Resolver struct {
	path string

	mu   sync.Mutex
	seen os.FileInfo // what the last load read (or failed on)
	m    map[string]addressing.Address
	err  error
}

var _ addressing.DIDResolver = (*Resolver)(nil)

// Open reads and validates the DID file at path, so a bad file is reported
// when the gateway starts rather than on the first did: message.
func Open(path string) (*Resolver, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("did file %s: %w", path, err)
	}
	r := &Resolver{path: abs}
	if _, err := r.current(); err != nil {
		return nil, err
	}
	return r, nil
}

// Path is the file's absolute path.
func (r *Resolver) Path() string { return r.path }

// Len is the number of DIDs the file lists, as last read.
func (r *Resolver) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// ResolveDID returns the address the file gives for a, reading the file
// again first if it changed.
// ErrUnavailable wraps a resolution that failed because the file is
// missing or invalid right now (not because it lacks the DID): the
// service is unavailable until the file is fixed.
var ErrUnavailable = errors.New("did resolver unavailable")

func (r *Resolver) ResolveDID(ctx context.Context, a addressing.Address) (addressing.Address, error) {
	if err := ctx.Err(); err != nil {
		return addressing.Address{}, err
	}
	if a.Kind != addressing.KindDID {
		return addressing.Address{}, fmt.Errorf("%w: %s", ErrNotDID, a)
	}
	m, err := r.current()
	if err != nil {
		return addressing.Address{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	to, ok := m[a.String()]
	if !ok {
		return addressing.Address{}, &UnknownDIDError{DID: a.String(), File: r.path}
	}
	return to, nil
}

// current returns the map, reloading it when the file changed.
func (r *Resolver) current() (map[string]addressing.Address, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	li, err := os.Lstat(r.path)
	if err != nil {
		r.seen, r.m, r.err = nil, nil, nil
		return nil, fmt.Errorf("did file: %w", err) // the os error names the file
	}
	if r.seen != nil && sameVersion(r.seen, li) {
		return r.m, r.err
	}
	m, err := load(r.path, li)
	r.seen, r.m, r.err = li, m, err
	return m, err
}

// sameVersion reports whether two stats describe one unchanged file. An
// in-place edit moves the size or modification time; a rename over the
// path changes its identity.
func sameVersion(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && a.Mode() == b.Mode()
}

// load reads the file li describes. The checks run on the opened file, and
// that file must be the one li saw, so a swap between the two is refused
// rather than followed.
func load(path string, li os.FileInfo) (map[string]addressing.Address, error) {
	fail := func(r Reason, err error) (map[string]addressing.Address, error) {
		return nil, &FileError{File: path, Reason: r, Err: err}
	}
	if li.Mode()&os.ModeSymlink != 0 {
		return fail(ReasonSymlink, nil)
	}
	if !li.Mode().IsRegular() {
		return fail(ReasonNotRegular, nil) // checked before opening: opening a FIFO blocks
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("did file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("did file: %w", err)
	}
	if !os.SameFile(li, fi) {
		return fail(ReasonChanged, nil)
	}
	// Windows has no group or other bits to speak of.
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0 {
		return fail(ReasonWritable, fmt.Errorf("mode %#o", fi.Mode().Perm()))
	}
	if fi.Size() > MaxSize {
		return fail(ReasonTooLarge, nil)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("did file: %w", err)
	}
	if len(b) > MaxSize {
		return fail(ReasonTooLarge, nil) // it grew since the stat
	}
	m, err := Parse(b)
	if err != nil {
		var fe *FileError
		if errors.As(err, &fe) {
			fe.File = path
		}
		return nil, err
	}
	return m, nil
}

// Parse reads a DID file: one JSON object whose keys are did: addresses in
// canonical form (as addressing prints them) and whose values are addresses
// of any other kind, in any form addressing.Parse reads. It refuses invalid
// UTF-8, a repeated key, a value that is not a string, and anything after
// the object. The result is keyed by the DID's canonical string.
func Parse(b []byte) (map[string]addressing.Address, error) {
	fail := func(r Reason, key string, err error) (map[string]addressing.Address, error) {
		return nil, &FileError{Reason: r, Key: key, Err: err}
	}
	if len(b) > MaxSize {
		return fail(ReasonTooLarge, "", nil)
	}
	if !utf8.Valid(b) {
		return fail(ReasonSyntax, "", errors.New("not valid UTF-8"))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fail(ReasonSyntax, "", syntaxErr(err))
	}
	m := map[string]addressing.Address{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail(ReasonSyntax, "", err)
		}
		key, ok := tok.(string)
		if !ok {
			return fail(ReasonSyntax, "", errors.New("an object key is not a string"))
		}
		tok, err = dec.Token()
		if err != nil {
			return fail(ReasonSyntax, key, err)
		}
		val, ok := tok.(string)
		if !ok {
			return fail(ReasonValue, key, errors.New("the value must be a string"))
		}
		did, err := addressing.Parse(key)
		if err != nil {
			return fail(ReasonKey, key, err)
		}
		if did.Kind != addressing.KindDID || did.String() != key {
			return fail(ReasonKey, key, nil)
		}
		if _, dup := m[key]; dup {
			return fail(ReasonDuplicate, key, nil)
		}
		to, err := addressing.Parse(val)
		if err != nil {
			return fail(ReasonValue, key, err)
		}
		if to.Kind == addressing.KindDID {
			return fail(ReasonDIDValue, key, addressing.ErrDIDLoop)
		}
		m[key] = to
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fail(ReasonSyntax, "", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail(ReasonSyntax, "", errors.New("text after the object"))
	}
	return m, nil
}

func syntaxErr(err error) error {
	if err == nil {
		return errors.New("not a JSON object")
	}
	return err
}
