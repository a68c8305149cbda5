package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"strings"

	"github.com/sessiongateway/gateway/internal/safefile"
)

// readConfig finds and reads the config file: the one the config flag
// names, else its variable's, else each default file that exists, merged
// in order (a later file's key replaces an earlier one's).
func (st *Settings) readConfig(flags *flag.FlagSet, o *Options, onCmdline map[string]bool) (*configFile, error) {
	var paths []string
	explicit := true
	var f *flag.Flag
	env := ""
	if o.ConfigFlag != "" {
		f, env = flags.Lookup(o.ConfigFlag), EnvName(o.EnvPrefix, o.ConfigFlag)
	}
	switch {
	case f != nil && onCmdline[o.ConfigFlag]:
		paths, st.configSource = []string{f.Value.String()}, Flag
	case env != "" && o.getenv(env) != "":
		paths, st.configSource = []string{o.getenv(env)}, Env
		if f != nil {
			_ = f.Value.Set(paths[0])
		}
	default:
		if o.DefaultFiles != nil {
			paths = o.DefaultFiles(flags)
		}
		explicit = false
	}
	all := &configFile{values: map[string]fileValue{}}
	for _, path := range paths {
		if path == "" {
			continue
		}
		b, err := safefile.ReadOwnerWritable(path, o.MaxFile)
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("config file: %w", err)
		}
		cf, err := parseConfig(path, b)
		if err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
		all.merge(cf)
		st.configFiles = append(st.configFiles, path)
	}
	return all, nil
}

// apply fills s from the highest layer that gives it.
func (s *setting) apply(fs *flag.FlagSet, o *Options, file *configFile, onCmdline bool) error {
	if onCmdline {
		s.source = Flag
		if t, ok := s.flag.Value.(*tracked); ok {
			s.value = t.set
		} else {
			s.value = []string{s.flag.Value.String()}
		}
		return nil
	}
	canFile := !hasOwnFileFlag(fs, s.key)
	name := EnvName(o.EnvPrefix, s.key)
	v, vf := o.getenv(name), ""
	if canFile {
		vf = o.getenv(name + "_FILE")
	}
	switch {
	case v != "" && vf != "":
		return &Error{Key: s.key, Where: "environment " + name + " and " + name + "_FILE", Err: ErrValueAndFile}
	case v != "":
		s.source, s.origin = Env, name
		return s.set(s.fromText(v))
	case vf != "":
		s.source, s.origin, s.fromFile = SecretFile, name+"_FILE", vf
		txt, err := readSecret(vf, o.MaxSecret)
		if err != nil {
			return &Error{Key: s.key, Where: "environment " + name + "_FILE", Err: err}
		}
		return s.set(s.fromText(txt))
	}
	raw, hasRaw := file.values[s.key]
	rawFile, hasFile := file.values[s.key+"_file"]
	if !canFile {
		hasFile = false
	}
	switch {
	case hasRaw && hasFile:
		return &Error{Key: s.key, Where: file.where(s.key), Err: ErrValueAndFile}
	case hasRaw:
		s.source, s.origin = File, file.where(s.key)
		vals, err := s.fromJSON(raw.raw)
		if err != nil {
			return &Error{Key: s.key, Where: s.origin, Err: err}
		}
		return s.set(vals)
	case hasFile:
		k := s.key + "_file"
		s.source, s.origin = SecretFile, file.where(k)
		var p string
		if err := json.Unmarshal(rawFile.raw, &p); err != nil || p == "" {
			return &Error{Key: k, Where: s.origin, Err: fmt.Errorf("%w: want a file path", ErrWrongType)}
		}
		s.fromFile = p
		txt, err := readSecret(p, o.MaxSecret)
		if err != nil {
			return &Error{Key: k, Where: s.origin, Err: err}
		}
		return s.set(s.fromText(txt))
	}
	return nil
}

// fromText splits a variable's or a secret file's text: a list is
// comma-separated (a file's lines count as commas), a scalar is taken whole.
func (s *setting) fromText(v string) []string {
	if s.kind == kindList {
		return splitList(strings.ReplaceAll(v, "\n", ","))
	}
	return []string{v}
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// fromJSON checks a config file value against the flag's kind.
func (s *setting) fromJSON(raw json.RawMessage) ([]string, error) {
	wrong := func() error {
		return fmt.Errorf("%w: want %v, got %s", ErrWrongType, s.kind, jsonKind(raw))
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, wrong()
	}
	switch s.kind {
	case kindList:
		arr, ok := v.([]any)
		if !ok {
			return nil, wrong()
		}
		out := make([]string, 0, len(arr))
		for _, el := range arr {
			str, ok := el.(string)
			if !ok {
				return nil, wrong()
			}
			out = append(out, str)
		}
		return out, nil
	case kindBool:
		if b, ok := v.(bool); ok {
			return []string{fmt.Sprint(b)}, nil
		}
	case kindNumber:
		if n, ok := v.(json.Number); ok {
			return []string{n.String()}, nil
		}
	default:
		if str, ok := v.(string); ok {
			return []string{str}, nil
		}
	}
	return nil, wrong()
}

func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// set applies the values in order; a value a flag refuses is reported by
// kind, and quoted only when it is not a secret.
func (s *setting) set(vals []string) error {
	s.value = vals
	for _, v := range vals {
		if err := s.flag.Value.Set(v); err != nil {
			return &Error{Key: s.key, Where: s.origin, Err: s.badValue(v, err)}
		}
	}
	return nil
}

func (s *setting) badValue(v string, err error) error {
	shown := fmt.Sprintf("%q", s.shown(v))
	if s.secret() {
		shown = redacted
	}
	switch s.kind {
	case kindDuration:
		return fmt.Errorf("%w %s: not a duration (e.g. 30s, 5m)", ErrBadValue, shown)
	case kindBool:
		return fmt.Errorf("%w %s: not a boolean (true or false)", ErrBadValue, shown)
	case kindNumber:
		return fmt.Errorf("%w %s: not a number", ErrBadValue, shown)
	}
	if s.secret() {
		return fmt.Errorf("%w %s", ErrBadValue, shown) // the flag's message may quote it
	}
	why := redactUserinfo(strings.ReplaceAll(err.Error(), v, s.shown(v)))
	return fmt.Errorf("%w %s: %s", ErrBadValue, shown, why)
}

// readSecret reads a _FILE secret: a regular file, not a symlink, no
// permission bits for group or others, capped; surrounding whitespace is
// not part of the value.
func readSecret(path string, max int64) (string, error) {
	b, _, err := safefile.ReadSecret(path, max, nil)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
