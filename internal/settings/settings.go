package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/transport/uds"
)

// precedenceHelp is shown by `serve -h` and `config -h`; README says the same.
const precedenceHelp = `Every serve flag can also come from, in increasing precedence:
  its default < the config file < its environment variable < the command line.
  Config file: --config PATH (env GATEWAY_CONFIG), else <state-dir>/config.json
    if it exists; JSON with // and /* */ comments, keys are flag names:
    {"name": "gw", "settle": "3s", "bridge": false, "allow-host": ["a", "b"]}
  Environment: GATEWAY_<NAME>, dashes as underscores, e.g. GATEWAY_REMOTE_ORG;
    repeatable flags take a comma-separated list there (an array in the file).
  Secrets from files: GATEWAY_<NAME>_FILE, or "<name>_file" in the config file,
    reads the value from that file (trimmed; mode 0600 or stricter, no symlink);
    giving both the value and its _FILE in one place is an error.
  A higher layer replaces a lower one, lists included.
`

// Limits on what the configuration layer reads.
const (
	maxConfigFile = 1 << 20           // a config file is a page of settings
	maxSecretFile = auth.MaxTokenFile // a _FILE secret is a token or a key
)

// Errors a configuration can have; each comes wrapped in a *settingError
// naming the key and where it was given.
var (
	errUnknownKey   = errors.New("unknown key (keys are serve's flag names; see gateway config -h)")
	errWrongType    = errors.New("wrong type")
	errBadValue     = errors.New("invalid value")
	errValueAndFile = errors.New("both a value and its _file are given; give one")
	errNotSettable  = errors.New("cannot be set in the config file")
)

// settingError is a key that could not be applied.
type settingError struct {
	Key   string // the flag name
	Where string // the file and line, or the variable
	Err   error
}

func (e *settingError) Error() string { return fmt.Sprintf("%s: %q: %v", e.Where, e.Key, e.Err) }
func (e *settingError) Unwrap() error { return e.Err }

// source says which layer a setting's value came from.
type source uint8

const (
	sourceDefault source = iota
	sourceFile
	sourceEnv
	sourceFlag
)

var sourceWire = [...]string{sourceDefault: "default", sourceFile: "file", sourceEnv: "env", sourceFlag: "flag"}

func (s source) String() string { return sourceWire[s] }

// kind is the shape of a flag's value, which decides what a config file
// may give for it and how an environment variable is split.
type kind uint8

const (
	kindString kind = iota
	kindBool
	kindNumber
	kindDuration
	kindList
)

var kindWant = [...]string{
	kindString: "a string", kindBool: "true or false", kindNumber: "a number",
	kindDuration: `a duration string like "5m" or "30s"`, kindList: "an array of strings",
}

func (k kind) String() string { return kindWant[k] }

// kindOf reads a flag's kind from its Value: the standard scalar flags are
// flag.Getters; a Value without Get (multi, fs.Func) is taken as repeatable.
func kindOf(f *flag.Flag) kind {
	v := f.Value
	if t, ok := v.(*tracked); ok {
		v = t.Value
	}
	if b, ok := v.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return kindBool
	}
	g, ok := v.(flag.Getter)
	if !ok {
		return kindList
	}
	switch g.Get().(type) {
	case bool:
		return kindBool
	case time.Duration:
		return kindDuration
	case int, int64, uint, uint64, float64:
		return kindNumber
	}
	return kindString
}

// tracked records what was Set on a repeatable flag: a fs.Func's String is
// always empty, and `gateway config` must still show the effective list.
type tracked struct {
	flag.Value
	set []string
}

func (t *tracked) Set(s string) error {
	if err := t.Value.Set(s); err != nil {
		return err
	}
	t.set = append(t.set, s)
	return nil
}

func (t *tracked) String() string {
	if t == nil || t.Value == nil { // flag.PrintDefaults probes a zero Value
		return ""
	}
	return t.Value.String()
}

func (t *tracked) IsBoolFlag() bool {
	b, ok := t.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// setting is one flag's effective value and where it came from.
type setting struct {
	key      string
	kind     kind
	value    []string // what was Set, in order; nil: the default
	source   source
	origin   string // the variable, or file:line; "" for a default or a flag
	fromFile string // a _FILE secret's path
	flag     *flag.Flag
}

// secret says whether the value must never be printed.
func (s *setting) secret() bool { return s.fromFile != "" || secretName(s.key) }

func secretName(key string) bool {
	k := strings.ToLower(key)
	for _, w := range []string{"token", "key", "secret", "password", "cookie", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// display is the value as `gateway config` shows it, already redacted.
func (s *setting) display() any {
	if s.kind == kindList {
		vals := s.value
		if s.source == sourceDefault {
			vals = splitList(s.flag.DefValue)
		}
		if s.secret() && len(vals) > 0 {
			return "[redacted]"
		}
		if vals == nil {
			vals = []string{}
		}
		return vals
	}
	v := s.flag.Value.String()
	if s.secret() && v != "" {
		return "[redacted]"
	}
	return v
}

// settings is serve's configuration after every layer was applied.
type settings struct {
	configFile   string // "" when none was read
	configSource source
	list         []*setting // sorted by key, as flag.VisitAll gives them
}

// envName is the variable for a flag: --remote-org is GATEWAY_REMOTE_ORG.
func envName(key string) string {
	return "GATEWAY_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// configFlag registers --config; its default comes from GATEWAY_CONFIG
// through the same layer as every flag (loadSettings reads it first).
func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "", "config file (env GATEWAY_CONFIG; default <state-dir>/config.json if it exists)")
}

// loadSettings parses the command line into fs, then fills every flag the
// command line left alone from its environment variable or, failing that,
// the config file. The flags named in skip are the command's own (--json of
// gateway config) and take only the command line. It returns the positional
// arguments; a *settingError names the key that could not be applied.
func loadSettings(fs *flag.FlagSet, e *env, args []string, skip ...string) (*settings, []string, error) {
	skipped := map[string]bool{"config": true}
	for _, s := range skip {
		skipped[s] = true
	}
	fs.VisitAll(func(f *flag.Flag) {
		if kindOf(f) == kindList {
			f.Value = &tracked{Value: f.Value}
		}
		if v := envName(f.Name); !skipped[f.Name] && !strings.Contains(f.Usage, v) {
			f.Usage += " (env " + v + ")"
		}
	})
	pos, err := parse(fs, args)
	if err != nil {
		return nil, nil, &flagParseError{err}
	}
	onCmdline := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmdline[f.Name] = true })

	st := &settings{}
	file, err := st.readConfig(fs, e, onCmdline)
	if err != nil {
		return nil, nil, err
	}
	known := map[string]bool{}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if skipped[f.Name] {
			return
		}
		known[f.Name] = true
		s := &setting{key: f.Name, kind: kindOf(f), flag: f}
		st.list = append(st.list, s)
		if err := s.apply(fs, e, file, onCmdline[f.Name]); err != nil {
			errs = append(errs, err)
		}
	})
	for _, k := range file.keys() {
		name := strings.TrimSuffix(k, "_file")
		switch {
		case name == "config":
			errs = append(errs, &settingError{Key: k, Where: file.where(k), Err: errNotSettable})
		case !known[name] || (name != k && hasOwnFileFlag(fs, name)):
			errs = append(errs, &settingError{Key: k, Where: file.where(k), Err: errUnknownKey})
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return st, pos, nil
}

// flagParseError is a command line the flag package refused (and has
// already explained on the FlagSet's output).
type flagParseError struct{ err error }

func (e *flagParseError) Error() string { return e.err.Error() }
func (e *flagParseError) Unwrap() error { return e.err }

// commandFlags registers a command's own flags with extra and returns their
// names: they are not part of serve's configuration.
func commandFlags(fs *flag.FlagSet, extra func(*flag.FlagSet)) []string {
	if extra == nil {
		return nil
	}
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	extra(fs)
	var own []string
	fs.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] {
			own = append(own, f.Name)
		}
	})
	return own
}

// hasOwnFileFlag says whether --NAME-file exists, whose variable
// GATEWAY_NAME_FILE then is its own and not NAME's secret file.
func hasOwnFileFlag(fs *flag.FlagSet, name string) bool { return fs.Lookup(name+"-file") != nil }

// readConfig finds and reads the config file: --config, else
// GATEWAY_CONFIG, else <state-dir>/config.json if it exists.
func (st *settings) readConfig(flags *flag.FlagSet, e *env, onCmdline map[string]bool) (*configFile, error) {
	path, explicit := "", true
	switch f := flags.Lookup("config"); {
	case f != nil && onCmdline["config"]:
		path, st.configSource = f.Value.String(), sourceFlag
	case e.getenv("GATEWAY_CONFIG") != "":
		path, st.configSource = e.getenv("GATEWAY_CONFIG"), sourceEnv
		if f != nil {
			_ = f.Value.Set(path)
		}
	default:
		sd := flags.Lookup("state-dir")
		if sd == nil {
			return &configFile{}, nil
		}
		path, explicit = filepath.Join(sd.Value.String(), "config.json"), false
	}
	if path == "" {
		return &configFile{}, nil
	}
	b, err := readConfigFile(path)
	if !explicit && errors.Is(err, fs.ErrNotExist) {
		return &configFile{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	cf, err := parseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	cf.path = path
	st.configFile = path
	return cf, nil
}

// apply fills s from the highest layer that gives it.
func (s *setting) apply(fs *flag.FlagSet, e *env, file *configFile, onCmdline bool) error {
	if onCmdline {
		s.source = sourceFlag
		if t, ok := s.flag.Value.(*tracked); ok {
			s.value = t.set
		} else {
			s.value = []string{s.flag.Value.String()}
		}
		return nil
	}
	canFile := !hasOwnFileFlag(fs, s.key)
	name := envName(s.key)
	v, vf := e.getenv(name), ""
	if canFile {
		vf = e.getenv(name + "_FILE")
	}
	switch {
	case v != "" && vf != "":
		return &settingError{Key: s.key, Where: "environment " + name + " and " + name + "_FILE", Err: errValueAndFile}
	case v != "":
		s.source, s.origin = sourceEnv, name
		return s.set(s.fromText(v))
	case vf != "":
		s.source, s.origin, s.fromFile = sourceEnv, name+"_FILE", vf
		txt, err := readSecret(vf)
		if err != nil {
			return &settingError{Key: s.key, Where: "environment " + name + "_FILE", Err: err}
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
		return &settingError{Key: s.key, Where: file.where(s.key), Err: errValueAndFile}
	case hasRaw:
		s.source, s.origin = sourceFile, file.where(s.key)
		vals, err := s.fromJSON(raw.raw)
		if err != nil {
			return &settingError{Key: s.key, Where: s.origin, Err: err}
		}
		return s.set(vals)
	case hasFile:
		k := s.key + "_file"
		s.source, s.origin = sourceFile, file.where(k)
		var p string
		if err := json.Unmarshal(rawFile.raw, &p); err != nil || p == "" {
			return &settingError{Key: k, Where: s.origin, Err: fmt.Errorf("%w: want a file path", errWrongType)}
		}
		s.fromFile = p
		txt, err := readSecret(p)
		if err != nil {
			return &settingError{Key: k, Where: s.origin, Err: err}
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
		return fmt.Errorf("%w: want %v, got %s", errWrongType, s.kind, jsonKind(raw))
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
			return &settingError{Key: s.key, Where: s.origin, Err: s.badValue(v, err)}
		}
	}
	return nil
}

func (s *setting) badValue(v string, err error) error {
	shown := fmt.Sprintf("%q", v)
	if s.secret() {
		shown = "[redacted]"
	}
	switch s.kind {
	case kindDuration:
		return fmt.Errorf("%w %s: not a duration (e.g. 30s, 5m)", errBadValue, shown)
	case kindBool:
		return fmt.Errorf("%w %s: not a boolean (true or false)", errBadValue, shown)
	case kindNumber:
		return fmt.Errorf("%w %s: not a number", errBadValue, shown)
	}
	if s.secret() {
		return fmt.Errorf("%w %s", errBadValue, shown) // the flag's message may quote it
	}
	return fmt.Errorf("%w %s: %v", errBadValue, shown, err)
}

// readConfigFile reads the operator's config file: a regular file (a
// symlink to one is fine: that is how Kubernetes mounts a ConfigMap) that
// nobody but its owner can write, since it can name commands to run.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %w", path, auth.ErrFileNotRegular)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s has mode %#o, writable by group or others; run chmod go-w %s", path, fi.Mode().Perm(), path)
	}
	return readCapped(f, path, maxConfigFile)
}

// readSecret reads a _FILE secret as auth.TokenFile reads a token: a
// regular file, not a symlink, no permission bits for group or others,
// capped; surrounding whitespace is not part of the value.
func readSecret(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return "", &auth.FileError{Path: path, Err: auth.ErrFileSymlink}
		}
		return "", &auth.FileError{Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", &auth.FileError{Path: path, Err: err}
	}
	switch {
	case !fi.Mode().IsRegular():
		return "", &auth.FileError{Path: path, Err: auth.ErrFileNotRegular}
	case fi.Mode().Perm()&0o077 != 0:
		return "", &auth.FileError{Path: path, Mode: fi.Mode(), Err: auth.ErrFileMode}
	}
	b, err := readCapped(f, path, maxSecretFile)
	if err != nil {
		return "", &auth.FileError{Path: path, Err: err}
	}
	return strings.TrimSpace(string(b)), nil
}

func readCapped(f *os.File, path string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s %w (more than %d bytes)", path, auth.ErrFileTooLarge, max)
	}
	return b, nil
}

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
	if err := uds.CheckUniqueKeys(clean, errConfigSyntax, errConfigDupKey); err != nil {
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

// annotate adds where a flag named in a check's message got its value, so
// an error about --held-expiry points at the file line or the variable. A
// check may quote a value: a secret's is blanked out first.
func (st *settings) annotate(msg string) string {
	var notes []string
	for _, s := range st.list {
		if s.secret() && s.source != sourceDefault {
			for _, v := range s.value {
				if v != "" {
					msg = strings.ReplaceAll(msg, v, "[redacted]")
					msg = strings.ReplaceAll(msg, strings.Trim(strconv.Quote(v), `"`), "[redacted]")
				}
			}
		}
		if s.origin == "" || !mentions(msg, "--"+s.key) {
			continue
		}
		notes = append(notes, fmt.Sprintf("--%s came from %s", s.key, s.origin))
	}
	if len(notes) == 0 {
		return msg
	}
	return msg + " (" + strings.Join(notes, "; ") + ")"
}

// mentions says whether msg holds word not followed by more of a flag name.
func mentions(msg, word string) bool {
	for i := 0; ; {
		j := strings.Index(msg[i:], word)
		if j < 0 {
			return false
		}
		end := i + j + len(word)
		if end == len(msg) || !isNameByte(msg[end]) {
			return true
		}
		i = end
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

// configEntry is one line of `gateway config --json`.
type configEntry struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"`
	Origin string `json:"origin,omitempty"` // the variable or file:line
	File   string `json:"file,omitempty"`   // a _FILE secret's path, never its content
}

func (st *settings) entries() []configEntry {
	out := []configEntry{{Key: "config", Value: st.configFile, Source: st.configSource.String()}}
	if st.configFile == "" {
		out[0].Source = sourceDefault.String()
	}
	for _, s := range st.list {
		out = append(out, configEntry{Key: s.key, Value: s.display(), Source: s.source.String(), Origin: s.origin, File: s.fromFile})
	}
	return out
}

// printSettings writes the effective configuration, secrets redacted.
func printSettings(w io.Writer, st *settings, asJSON bool) error {
	ents := st.entries()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(ents)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, e := range ents {
		val := e.Value
		if l, ok := val.([]string); ok {
			val = strings.Join(l, ",")
		}
		src := e.Source
		if e.Origin != "" {
			src += " " + e.Origin
		}
		if e.File != "" {
			src += " (" + e.File + ")"
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\n", e.Key, val, src)
	}
	return tw.Flush()
}

// runConfig is `gateway config`: serve's flags and checks, then a print
// of the result instead of a start.
func runConfig(_ context.Context, e *env, args []string) int {
	var asJSON *bool
	setup, code := setupServe(e, "config", args, func(fs *flag.FlagSet) {
		asJSON = fs.Bool("json", false, "print JSON: [{key, value, source, origin, file}]")
	})
	if setup == nil {
		return code
	}
	if err := printSettings(e.stdout, setup.settings, *asJSON); err != nil {
		fmt.Fprintf(e.stderr, "gateway: %v\n", err)
		return exitError
	}
	return exitOK
}

// serveUsage is the -h text of serve and config.
func serveUsage(fs *flag.FlagSet, cmd string) func() {
	return func() {
		w := fs.Output()
		if cmd == "config" {
			fmt.Fprintln(w, "usage: gateway config [--config PATH] [--json] [serve flags...]")
			fmt.Fprintln(w, "Prints serve's effective configuration: every key, its value and where it came from")
			fmt.Fprintln(w, "(default, file, env or flag), secrets redacted; starts nothing. Exits 2 naming the")
			fmt.Fprintln(w, "bad key when the configuration is invalid.")
		} else {
			fmt.Fprintln(w, "usage: gateway serve [flags]")
		}
		fmt.Fprintln(w)
		fmt.Fprint(w, precedenceHelp)
		fmt.Fprintln(w)
		fs.PrintDefaults()
	}
}
