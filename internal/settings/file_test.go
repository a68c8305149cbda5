package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseConfigLines(t *testing.T) {
	cf, err := parseConfig("config.json", []byte("{\n  // comment \"with\" quotes\n  \"a\": 1,\n  /* multi\n line */ \"b\": [\"x\",\n \"y\"],\n\"c\": \"\\\"/*\"\n}"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 3, "b": 5, "c": 7}
	for k, line := range want {
		if got := cf.values[k].line; got != line {
			t.Errorf("%s on line %d, want %d", k, got, line)
		}
	}
	if got := string(cf.values["c"].raw); got != `"\"/*"` {
		t.Errorf("c = %s: a comment marker inside a string was touched", got)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"name": "gw", "settle": "3s", "bridge": false, "allow-host": ["a", "b"]}`))
	f.Add([]byte("// c\n{\n /* x */ \"a\": 1 // y\n}\n"))
	f.Add([]byte(`{"a": "/* not a comment */", "b": "\\"}`))
	f.Add([]byte(`{"a": 1, "a": 2}`))
	f.Add([]byte("{} /* open"))
	f.Add([]byte(`[1]`))
	f.Add([]byte("{\"a\": [1, 2,], // trailing\n}"))
	f.Add([]byte(strings.Repeat("[", 100)))
	f.Fuzz(func(t *testing.T, b []byte) {
		clean, err := standardize(b)
		if err == nil {
			if len(clean) != len(b) {
				t.Fatalf("standardizing changed the length %d -> %d", len(b), len(clean))
			}
			for i := range b {
				if (b[i] == '\n') != (clean[i] == '\n') {
					t.Fatalf("standardizing moved a newline at %d", i)
				}
			}
		}
		cf, err := parseConfig("config.json", b)
		if err != nil {
			return // refusing is fine; crashing is not
		}
		lines := 1 + bytes.Count(b, []byte("\n"))
		if len(cf.order) != len(cf.values) {
			t.Fatalf("%d keys in order, %d values: a duplicate slipped through", len(cf.order), len(cf.values))
		}
		for k, v := range cf.values {
			if v.line < 1 || v.line > lines {
				t.Fatalf("key %q on line %d of %d", k, v.line, lines)
			}
			if !json.Valid(v.raw) {
				t.Fatalf("key %q holds invalid JSON %q", k, v.raw)
			}
		}
	})
}

func TestParseConfigTakesHuJSON(t *testing.T) {
	cf, err := parseConfig("config.json", []byte("{\n  \"a\": [\"x\", \"y\",], // trailing commas\n  \"b\": true,\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(cf.values["a"].raw); got != `["x", "y" ]` && !json.Valid(cf.values["a"].raw) {
		t.Errorf("a = %s", got)
	}
	if cf.values["b"].line != 3 {
		t.Errorf("b on line %d, want 3", cf.values["b"].line)
	}
}

func TestParseConfigErrorsNameALineAndQuoteNothing(t *testing.T) {
	const secret = "hunter2hunter2"
	tests := []struct {
		name string
		text string
		line string
	}{
		{"an unquoted value", "{\n\"remote-org\": " + secret + "\n}", "line 2"},
		{"an unclosed comment", "{\"a\": 1}\n/* " + secret, "line 2"},
		{"nesting past the cap", "{\"a\": " + strings.Repeat("[", maxDepth+1) + "}", "nested deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseConfig("config.json", []byte(tt.text))
			if err == nil || !errors.Is(err, errConfigSyntax) || !strings.Contains(err.Error(), tt.line) || strings.Contains(err.Error(), secret) {
				t.Fatalf("err = %v, want a syntax error naming %q without the value", err, tt.line)
			}
		})
	}
}
