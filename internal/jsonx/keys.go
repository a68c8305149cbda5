package jsonx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// CheckUniqueKeys walks the JSON text b and refuses any object that repeats
// a key (after unescaping), which encoding/json would silently resolve to
// the last one. The errors wrap the caller's own sentinels, so each leg keeps
// its typed errors: syntaxErr for malformed text, dupErr for a repeated key.
// Text nested deeper than MaxDepth is a syntax error (also ErrTooDeep),
// found by a scan that allocates nothing, before any decoding.
func CheckUniqueKeys(b []byte, syntaxErr, dupErr error) error {
	if err := checkDepth(b, syntaxErr); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // 1e400 is valid JSON; only a float64 cannot hold it
	type container struct {
		keys    map[string]struct{} // nil for an array
		wantKey bool
	}
	var stack []*container
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", syntaxErr, err)
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &container{keys: map[string]struct{}{}, wantKey: true})
			case '[':
				stack = append(stack, &container{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].wantKey {
			top := stack[n-1]
			k := tok.(string) // an object key is always a string token
			if _, dup := top.keys[k]; dup {
				return fmt.Errorf("%w: %q", dupErr, k)
			}
			top.keys[k] = struct{}{}
			top.wantKey = false
			continue
		}
		valueDone()
	}
}
