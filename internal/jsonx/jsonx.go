package jsonx

import (
	"bytes"
	"encoding/json"
)

// Marshal encodes v compactly.
func Marshal(v any) ([]byte, error) { return encode(v, "") }

// MarshalIndent encodes v as JSON.stringify(v, null, indent) lays it out.
func MarshalIndent(v any, indent string) ([]byte, error) { return encode(v, indent) }

func encode(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
