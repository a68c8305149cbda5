package jsonx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// CheckUniqueKeys walks the JSON text b and refuses any object that repeats
// a key (after unescaping), which encoding/json would silently resolve to
// the last one. The errors wrap the caller's own sentinels, so each leg keeps
// its typed errors: syntaxErr for malformed text, dupErr for a repeated key.
// Text nested deeper than MaxDepth is a syntax error (also ErrTooDeep),
// found by a scan that allocates nothing, before any decoding. Like
// encoding/json, it takes invalid UTF-8 inside strings and a stream of
// several values.
func CheckUniqueKeys(b []byte, syntaxErr, dupErr error) error {
	if err := checkDepth(b, syntaxErr); err != nil {
		return err
	}
	// One streaming pass of a tokenizer that tracks each object's names
	// itself: no token values are built, and its buffers are reused.
	s := scanners.Get().(*scanner)
	defer scanners.Put(s)
	s.buf = *bytes.NewBuffer(b)
	defer func() {
		// Hold no caller's bytes in the pool: the decoder reads straight
		// from the buffer's bytes, so it is reset onto the empty one too.
		s.buf = bytes.Buffer{}
		s.dec.Reset(&s.buf)
	}()
	s.dec.Reset(&s.buf, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(true))
	for {
		err := s.dec.SkipValue()
		switch {
		case err == nil:
			continue
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, jsontext.ErrDuplicateName):
			var se *jsontext.SyntacticError
			if errors.As(err, &se) {
				return fmt.Errorf("%w: %q", dupErr, se.JSONPointer.LastToken())
			}
			return fmt.Errorf("%w: %v", dupErr, err)
		}
		return fmt.Errorf("%w: %v", syntaxErr, err)
	}
}

// scanner is CheckUniqueKeys' reusable tokenizer.
type scanner struct {
	dec jsontext.Decoder
	buf bytes.Buffer
}

var scanners = sync.Pool{New: func() any { return new(scanner) }}
