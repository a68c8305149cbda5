package jsonx

import (
	"errors"
	"testing"
)

var (
	errSyntax = errors.New("syntax")
	errDup    = errors.New("duplicate")
)

func TestCheckUniqueKeys(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"distinct keys pass", `{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, nil},
		{"a repeated key is refused", `{"a":1,"a":2}`, errDup},
		{"a key repeated under another spelling is refused", `{"a":1,"\u0061":2}`, errDup},
		{"a repeat in a nested object is refused", `{"x":[{"b":1,"b":1}]}`, errDup},
		{"a huge number is not a syntax error", `{"n":1e400}`, nil},
		{"malformed text is the caller's syntax error", `{"a" 1}`, errSyntax},
		{"truncated text is the caller's syntax error", `{"a":`, errSyntax},
		{"invalid UTF-8 in a string passes, as encoding/json takes it", "{\"a\":\"\xff\"}", nil},
		{"the same key in two values of a stream passes", `{"a":1} {"a":2}`, nil},
		{"nothing at all passes", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckUniqueKeys([]byte(tt.in), errSyntax, errDup)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("CheckUniqueKeys(%s) = %v, want %v", tt.in, err, tt.want)
			}
		})
	}
}

func TestARepeatedKeyIsNamed(t *testing.T) {
	err := CheckUniqueKeys([]byte(`{"x":[{"to":1,"to":2}]}`), errSyntax, errDup)
	if !errors.Is(err, errDup) || err.Error() != `duplicate: "to"` {
		t.Fatalf("got %v, want the key named after the caller's error", err)
	}
}
