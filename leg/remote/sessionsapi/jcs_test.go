package sessionsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCanonicalizeMatchesTheRFC8785Vectors(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "jcs", "input", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 6 {
		t.Fatalf("found %d vectors in testdata/jcs/input, want the six of RFC 8785", len(inputs))
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name+" canonicalises byte for byte", func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", "jcs", "output", name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonicalize(src)
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got\n%q\nwant\n%q", got, want)
			}
		})
	}
}

func TestCanonicalizeAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"members are sorted by UTF-16 code units", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"a valid surrogate pair becomes its code point", `"\ud83d\ude00"`, "\"\U0001F600\""},
		{"nesting exactly at the cap is fine", strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)},
		{"the same name in sibling objects is not a duplicate", `[{"a":1},{"a":2}]`, `[{"a":1},{"a":2}]`},
		{"the same name at two levels is not a duplicate", `{"a":{"a":1}}`, `{"a":{"a":1}}`},
		{"numbers take their ES6 spelling", `[1.0, 1e21, -0]`, `[1,1e+21,0]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tt.in))
			if err != nil {
				t.Fatalf("Canonicalize(%q): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Fatalf("Canonicalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   error
		offset int // -1: not an *Error of ours
	}{
		{"invalid UTF-8 inside a string", "{\"a\":\"x\xffy\"}", ErrInvalidUTF8, 7},
		{"invalid UTF-8 outside any string", "[1]\xc3", ErrInvalidUTF8, 3},
		{"an overlong UTF-8 encoding", "\"\xc0\xaf\"", ErrInvalidUTF8, 1},
		{"a UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", ErrInvalidUTF8, 1},
		{"a reversed surrogate pair", `"\udc00\ud800"`, ErrBadSurrogate, 1},
		{"a lone high surrogate", `"a\ud800b"`, ErrBadSurrogate, 2},
		{"a lone low surrogate", `"\udfff"`, ErrBadSurrogate, 1},
		{"a high surrogate followed by a non-surrogate escape", `"\ud800\u0041"`, ErrBadSurrogate, 1},
		{"a high surrogate at the end of a name", `{"\ud800":1}`, ErrBadSurrogate, 2},
		{"a duplicate name", `{"a":1,"a":2}`, ErrDuplicateKey, 7},
		{"a duplicate name spelt with an escape", `{"a":1,"\u0061":2}`, ErrDuplicateKey, 7},
		{"a duplicate name deep inside", `[{"x":{"k":1,"j":2,"k":3}}]`, ErrDuplicateKey, 19},
		{"arrays nested one past the cap", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), ErrTooDeep, MaxDepth},
		{"objects nested far past the cap", strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), ErrTooDeep, 5 * MaxDepth},
		{"no input at all", "", ErrInvalidJSON, -1},
		{"trailing garbage", `{} x`, ErrInvalidJSON, -1},
		{"an unterminated object", `{"a":1`, ErrInvalidJSON, -1},
		{"a bad literal", `[tru]`, ErrInvalidJSON, -1},
		{"an unknown escape", `"\q"`, ErrInvalidJSON, -1},
		{"a number too large for a double", `1e400`, ErrInvalidJSON, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is rejected", func(t *testing.T) {
			out, err := Canonicalize([]byte(tt.in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Canonicalize(%q) = %q, %v; want %v", tt.in, out, err, tt.want)
			}
			var e *Error
			if tt.offset < 0 {
				if errors.As(err, &e) {
					t.Fatalf("got our own rejection %v; want the library's", err)
				}
				return
			}
			if !errors.As(err, &e) || e.Offset != tt.offset {
				t.Fatalf("error %v: want offset %d", err, tt.offset)
			}
		})
	}
}

func TestDuplicateKeyErrorDoesNotDumpLongNames(t *testing.T) {
	name := strings.Repeat("k", 10000)
	_, err := Canonicalize([]byte(`{"` + name + `":1,"` + name + `":2}`))
	if !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("got %v, want ErrDuplicateKey", err)
	}
	if len(err.Error()) > 200 {
		t.Fatalf("error message is %d bytes long", len(err.Error()))
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,"x\u00e9\ud83d\ude00",1e-7,-0.5]}`,
		`"\udc00\ud800"`, `{"a":1,"a":2}`, `[[[[]]]]`, "\"\xff\"", `{"\u0061":1,"a":2}`,
		`{"\n":"\u0000\t\/"}`, `1E400`, ` [ 1 , 2 ] `,
	} {
		f.Add([]byte(s))
	}
	for _, dir := range []string{"input", "output"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "jcs", dir, "*.json"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		if err != nil {
			return // rejecting is fine; crashing or hanging is not
		}
		if !utf8.Valid(out) || !json.Valid(out) {
			t.Fatalf("Canonicalize(%q) = %q: not valid UTF-8 JSON", in, out)
		}
		again, err := Canonicalize(out)
		if err != nil {
			t.Fatalf("canonical form %q of %q is rejected: %v", out, in, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, again)
		}
	})
}
