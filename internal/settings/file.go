package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sessiongateway/gateway/internal/jsonx"
)

// configFile is a parsed config file: each key's raw JSON and its line.
type configFile struct {
	path   string
	values map[string]fileValue
	order  []string
}

type fileValue struct {
	raw  json.RawMessage
	line int
}

func (c *configFile) keys() []string { return c.order }

func (c *configFile) where(key string) string {
	if v, ok := c.values[key]; ok {
		return fmt.Sprintf("%s:%d", c.path, v.line)
	}
	return c.path
}

// Config file syntax errors.
var (
	errConfigSyntax = errors.New("not valid JSON")
	errConfigDupKey = errors.New("a key is given twice")
	errConfigShape  = errors.New("want one JSON object of settings")
)

// parseConfig reads JSON with // and /* */ comments: one object whose keys
// are flag names. Its errors name a line, never quote a value.
func parseConfig(b []byte) (*configFile, error) {
	clean, err := stripComments(b)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(clean, new(json.RawMessage)); err != nil {
		return nil, syntaxAt(clean, err)
	}
	if err := jsonx.CheckUniqueKeys(clean, errConfigSyntax, errConfigDupKey); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	cf := &configFile{values: map[string]fileValue{}}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errConfigShape
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxAt(clean, err)
		}
		key, _ := tok.(string) // an object key is always a string
		line := 1 + bytes.Count(clean[:dec.InputOffset()], []byte("\n"))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxAt(clean, err)
		}
		cf.values[key] = fileValue{raw: raw, line: line}
		cf.order = append(cf.order, key)
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxAt(clean, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: text after the object", errConfigShape)
	}
	return cf, nil
}

// syntaxAt turns a JSON error into a line number without the offending text.
func syntaxAt(b []byte, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) && syn.Offset <= int64(len(b)) {
		return fmt.Errorf("%w (line %d)", errConfigSyntax, 1+bytes.Count(b[:syn.Offset], []byte("\n")))
	}
	return errConfigSyntax
}

// stripComments blanks // and /* */ comments outside strings with spaces,
// keeping every newline, so offsets and line numbers stay those of the file.
func stripComments(b []byte) ([]byte, error) {
	out := bytes.Clone(b)
	inString, escaped := false, false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return nil, fmt.Errorf("%w: a /* comment is not closed (line %d)", errConfigSyntax, 1+bytes.Count(b[:i], []byte("\n")))
			}
			for j := i; j < i+2+end+2; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i += 2 + end + 1
		}
	}
	return out, nil
}
