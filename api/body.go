package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/sessiongateway/gateway/internal/jsonx"
)

// MaxDepth caps how deep a request body nests objects and arrays: the
// sockets' cap, which no body of this API comes near (a tool's input in a
// permission answer is a few levels). A deeper one is refused before it is
// parsed, so a body of brackets costs no more than its bytes.
const MaxDepth = jsonx.MaxDepth

var (
	errSyntax  = errors.New("bad JSON")
	errDupKey  = errors.New("bad JSON: duplicate key")
	errTooDeep = fmt.Errorf("bad JSON: nested deeper than %d levels", MaxDepth)
)

// slowBody is a body that did not arrive within the server's ReadTimeout
// (AnonReadTimeout before a token):
// a 408, never a 500.
type slowBody struct{ err error }

func (e slowBody) Error() string {
	return "request body not received in time (a request with a token must arrive whole within " + ReadTimeout.String() +
		", a body sent before one within " + AnonReadTimeout.String() + ")"
}

func (e slowBody) Unwrap() error { return e.err }

// readBody reads the (capped) body, telling a body cut short by the read
// deadline (slowBody) from other failures.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if rb, ok := r.Body.(*readAlready); ok && rb.Len() == len(rb.b) {
		_, _ = rb.Seek(0, io.SeekEnd) // read, as io.ReadAll would leave it
		return rb.b, nil
	}
	var b []byte
	if n := r.ContentLength; n > 0 && n <= MaxBody {
		// The declared length, read into one buffer of its size (a body
		// that is longer still grows it; MaxBody caps what is read), up
		// to firstAlloc: a client declaring 4 MiB and sending a byte must
		// not make us hold 4 MiB; a body that is that long grows into it.
		b = make([]byte, 0, min(n, firstAlloc)+1)
	}
	b, err := readAll(r.Body, b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, slowBody{err}
	}
	return b, err
}

// firstAlloc caps the buffer made for a body's declared length before
// any of it arrived.
const firstAlloc = 64 << 10

// readAll is io.ReadAll into b's spare capacity.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	if cap(b) == 0 {
		return io.ReadAll(r)
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // room to grow
		}
	}
}

// readAlready is a body read once (by the long routes' wrapper) and kept
// for the handler: readBody takes its bytes rather than copying them.
type readAlready struct {
	*bytes.Reader
	b []byte
}

func newReadAlready(b []byte) *readAlready { return &readAlready{bytes.NewReader(b), b} }

func (*readAlready) Close() error { return nil }

// decode reads a JSON body strictly: one object, no unknown fields, no
// key twice in an object (encoding/json would keep the last one silently,
// so two readers of one body could disagree on what it says), nested at
// most MaxDepth deep.
func decode(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return errBadRequest("empty body: expected a JSON object")
	}
	if err := checkJSON(b); err != nil {
		return errBadRequest(err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errBadRequest("bad JSON: " + err.Error())
	}
	if dec.More() {
		return errBadRequest("bad JSON: more than one value in the body")
	}
	return nil
}

// checkJSON refuses a body nested deeper than MaxDepth, by a scan of its
// bytes that allocates nothing, and then one that repeats a key.
func checkJSON(b []byte) error {
	if !jsonx.WithinDepth(b, MaxDepth) {
		return errTooDeep
	}
	return jsonx.CheckUniqueKeys(b, errSyntax, errDupKey)
}
