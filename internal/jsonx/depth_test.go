package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

func TestWithinDepth(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  bool
	}{
		{`{}`, 1, true},
		{`{"a":[1]}`, 1, false},
		{`{"a":[1]}`, 2, true},
		{`{"a":"[[[[[["}`, 1, true}, // brackets in a string do not count
		{`{"a":"\"[[[["}`, 1, true}, // nor after an escaped quote
		{`{"a":"\\"}`, 1, true},     // an escaped backslash ends the escape
		{`[[],[],[]]`, 2, true},     // siblings do not add up
		{strings.Repeat("[", MaxDepth+1), MaxDepth, false},
		{strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), MaxDepth, true},
	}
	for _, tt := range tests {
		if got := WithinDepth([]byte(tt.in), tt.limit); got != tt.want {
			t.Errorf("WithinDepth(%.40s, %d) = %v, want %v", tt.in, tt.limit, got, tt.want)
		}
	}
}

func TestCheckUniqueKeysRefusesDeepNestingCheaply(t *testing.T) {
	line := append([]byte(`{"a":`), bytes.Repeat([]byte("["), 1<<20)...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := CheckUniqueKeys(line, errSyntax, errDup)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errSyntax) || !errors.Is(err, ErrTooDeep) {
		t.Fatalf("CheckUniqueKeys(1 MiB of '[') = %v, want the syntax error and ErrTooDeep", err)
	}
	// Before the cap the decoder's stack cost about 58 MB for this line.
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Fatalf("refusing 1 MiB of '[' allocated %d bytes, want at most 64 KiB", got)
	}
	ok := append([]byte(`{"a":`+strings.Repeat("[", MaxDepth-1)), bytes.Repeat([]byte("]"), MaxDepth-1)...)
	if err := CheckUniqueKeys(append(ok, '}'), errSyntax, errDup); err != nil {
		t.Fatalf("nesting at MaxDepth refused: %v", err)
	}
}

// FuzzCheckUniqueKeys checks the capped checker against encoding/json: it
// refuses exactly the text WithinDepth finds too deep, never calls valid
// shallow text a syntax error, and WithinDepth agrees with the decoder's own
// nesting on valid text.
func FuzzCheckUniqueKeys(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1,"a":2}`, `[[[[]]]]`, `{"a":"[\"{"}`, `{"a":[{"b":[{}]}]}`, `"x"`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckUniqueKeys(b, errSyntax, errDup)
		deep := !WithinDepth(b, MaxDepth)
		if deep != errors.Is(err, ErrTooDeep) {
			t.Fatalf("WithinDepth says deep=%v, CheckUniqueKeys said %v", deep, err)
		}
		if !json.Valid(b) {
			return
		}
		if !deep && err != nil && !errors.Is(err, errDup) {
			t.Fatalf("valid JSON %q refused: %v", b, err)
		}
		d := decodedDepth(t, b)
		for _, limit := range []int{d - 1, d} {
			if limit >= 0 && WithinDepth(b, limit) != (d <= limit) {
				t.Fatalf("WithinDepth(%q, %d) disagrees with the decoder's depth %d", b, limit, d)
			}
		}
	})
}

// decodedDepth is the deepest nesting encoding/json's tokenizer reports.
func decodedDepth(t *testing.T, b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest
		}
		if err != nil {
			t.Fatalf("valid JSON %q: %v", b, err)
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
			deepest = max(deepest, depth)
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}
