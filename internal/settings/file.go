package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/sessiongateway/gateway/internal/jsonx"
)

// configFile is the parsed config files, merged: each key's raw JSON and
// where it was given; a key in a later file replaces the earlier one's.
type configFile struct {
	paths  []string
	values map[string]fileValue
	order  []keyAt // every key of every file, for the unknown-key check
}

type fileValue struct {
	raw  json.RawMessage
	path string
	line int
}

func (v fileValue) where() string { return fmt.Sprintf("%s:%d", v.path, v.line) }

// keyAt is a key where a file gives it.
type keyAt struct {
	key   string
	where string
}

func (c *configFile) keys() []keyAt { return c.order }

func (c *configFile) where(key string) string {
	if v, ok := c.values[key]; ok {
		return v.where()
	}
	return strings.Join(c.paths, ", ")
}

// merge lays next over c.
func (c *configFile) merge(next *configFile) {
	if c.values == nil {
		c.values = map[string]fileValue{}
	}
	c.paths = append(c.paths, next.paths...)
	for _, k := range next.order {
		c.order = append(c.order, k)
		c.values[k.key] = next.values[k.key]
	}
}

// Config file syntax errors.
var (
	errConfigSyntax = errors.New("not valid JSON")
	errConfigDupKey = errors.New("a key is given twice")
	errConfigShape  = errors.New("want one JSON object of settings")
)

// parseConfig reads path's text b, JSON with // and /* */ comments and
// trailing commas (HuJSON): one object whose keys are flag names. Its
// errors name a line, never quote a value.
func parseConfig(path string, b []byte) (*configFile, error) {
	clean, err := standardize(b)
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
	cf := &configFile{paths: []string{path}, values: map[string]fileValue{}}
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
		v := fileValue{raw: raw, path: path, line: line}
		cf.values[key] = v
		cf.order = append(cf.order, keyAt{key, v.where()})
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

// maxDepth bounds how deeply the file's arrays and objects nest: the
// HuJSON parser recurses once a level, and a settings file needs two.
const maxDepth = 64

// standardize blanks the comments and trailing commas with spaces, so
// offsets and line numbers stay those of the file. The parser's own error
// may quote the text; only its line is kept.
func standardize(b []byte) ([]byte, error) {
	if tooDeep(b) {
		return nil, fmt.Errorf("%w: nested deeper than %d", errConfigSyntax, maxDepth)
	}
	v, err := hujson.Parse(b)
	if err != nil {
		var line, col int
		if _, serr := fmt.Sscanf(err.Error(), "hujson: line %d, column %d:", &line, &col); serr == nil {
			return nil, fmt.Errorf("%w (line %d)", errConfigSyntax, line)
		}
		return nil, errConfigSyntax
	}
	v.Standardize()
	return v.Pack(), nil
}

// tooDeep says whether b opens more than maxDepth brackets at once. It
// counts brackets inside strings and comments too, so it can only refuse a
// file that also holds many unclosed brackets in text: none a settings
// file has.
func tooDeep(b []byte) bool {
	depth := 0
	for _, c := range b {
		switch c {
		case '[', '{':
			if depth++; depth > maxDepth {
				return true
			}
		case ']', '}':
			depth = max(0, depth-1)
		}
	}
	return false
}
