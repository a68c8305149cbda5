package settings

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Errors a configuration can have; each comes wrapped in a *Error naming
// the key and where it was given.
var (
	ErrUnknownKey   = errors.New("unknown key")
	ErrWrongType    = errors.New("wrong type")
	ErrBadValue     = errors.New("invalid value")
	ErrValueAndFile = errors.New("both a value and its _file are given; give one")
	ErrNotSettable  = errors.New("cannot be set in the config file")
)

// Error is a key that could not be applied.
type Error struct {
	Key   string // the flag name
	Where string // the file and line, or the variable
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %q: %v", e.Where, e.Key, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Source says which layer a setting's value came from.
type Source uint8

// The layers, lowest first; SecretFile is a value read from the file a
// _FILE variable or a "<name>_file" key names, in the layer that named it.
const (
	Default Source = iota
	File
	Env
	Flag
	SecretFile
)

var sourceWire = [...]string{Default: "default", File: "file", Env: "env", Flag: "flag", SecretFile: "_FILE"}

func (s Source) String() string { return sourceWire[s] }

// Options say where the layers are.
type Options struct {
	// Getenv reads the environment; nil reads nothing.
	Getenv func(string) string
	// EnvPrefix starts every variable: with "APP_", --remote-org is
	// APP_REMOTE_ORG.
	EnvPrefix string
	// ConfigFlag is the flag naming the config file, if the FlagSet has
	// one; its variable names the file too. It is never set from the file.
	ConfigFlag string
	// DefaultFiles are the config files read, each if it exists, when
	// neither the flag nor its variable names one, lowest first: a key in a
	// later file replaces an earlier one's. nil or "" reads none.
	DefaultFiles func(*flag.FlagSet) []string
	// Skip names the command's own flags, which take only the command line.
	Skip []string
	// NotInFile names flags a config file may not set, as the flags that
	// find the config files (a state directory holding one): a file could
	// move itself and be only half followed. Their variables still count.
	NotInFile []string
	// KeyHint follows "unknown key" in the error for a key no flag has.
	KeyHint string
	// MaxFile caps a config file (default 1 MiB), MaxSecret a _FILE
	// secret (default 64 KiB).
	MaxFile, MaxSecret int64
}

func (o Options) withDefaults() Options {
	if o.MaxFile <= 0 {
		o.MaxFile = 1 << 20
	}
	if o.MaxSecret <= 0 {
		o.MaxSecret = 64 << 10
	}
	return o
}

func (o *Options) getenv(k string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(k)
}

// EnvName is the variable for a flag: with prefix "APP_", --remote-org is
// APP_REMOTE_ORG.
func EnvName(prefix, key string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

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
// flag.Getters; a Value without Get (a repeatable flag, fs.Func) is taken
// as a list.
func kindOf(f *flag.Flag) kind {
	v := unwrap(f.Value)
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
// always empty, and the effective configuration must still show the list.
type tracked struct {
	flag.Value
	set []string
}

// unwrap is the flag's own Value under its tracked wrapper, if any.
func unwrap(v flag.Value) flag.Value {
	if t, ok := v.(*tracked); ok {
		return t.Value
	}
	return v
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
	source   Source
	origin   string // the variable, or file:line; "" for a default or a flag
	fromFile string // a _FILE secret's path
	derived  string // what an empty default shows (ShowDefault)
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

// Settings is a configuration after every layer was applied.
type Settings struct {
	configFiles  []string // the files read, lowest first
	configFlag   string
	configSource Source
	list         []*setting // sorted by key, as flag.VisitAll gives them
}

// Source says where key's value came from; ok is false for a key the
// configuration does not hold.
func (st *Settings) Source(key string) (src Source, ok bool) {
	for _, s := range st.list {
		if s.key == key {
			return s.source, true
		}
	}
	return Default, false
}

// Load parses the command line into fs, then fills every flag the command
// line left alone from its environment variable or, failing that, the
// config file. It returns the positional arguments (flags may come before,
// between or after them, see ParseArgs). A command line the flag package
// refused is a *ParseError; an *Error names a key that could not be
// applied, several are joined.
func Load(fs *flag.FlagSet, args []string, o Options) (*Settings, []string, error) {
	o = o.withDefaults()
	skipped := map[string]bool{}
	if o.ConfigFlag != "" {
		skipped[o.ConfigFlag] = true
	}
	for _, s := range o.Skip {
		skipped[s] = true
	}
	fs.VisitAll(func(f *flag.Flag) {
		if kindOf(f) == kindList {
			f.Value = &tracked{Value: f.Value}
		}
		if v := EnvName(o.EnvPrefix, f.Name); !skipped[f.Name] && !strings.Contains(f.Usage, v) {
			f.Usage += " (env " + v + ")"
		}
	})
	pos, err := ParseArgs(fs, args)
	if err != nil {
		return nil, nil, &ParseError{err}
	}
	onCmdline := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmdline[f.Name] = true })

	st := &Settings{configFlag: o.ConfigFlag}
	file, err := st.readConfig(fs, &o, onCmdline)
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
		if err := s.apply(fs, &o, file, onCmdline[f.Name]); err != nil {
			errs = append(errs, err)
		}
	})
	unknown := ErrUnknownKey
	if o.KeyHint != "" {
		unknown = fmt.Errorf("%w (%s)", ErrUnknownKey, o.KeyHint)
	}
	for _, ka := range file.keys() {
		k := ka.key
		name := strings.TrimSuffix(k, "_file")
		switch {
		case o.ConfigFlag != "" && name == o.ConfigFlag:
			errs = append(errs, &Error{Key: k, Where: ka.where, Err: ErrNotSettable})
		case slices.Contains(o.NotInFile, name):
			errs = append(errs, &Error{Key: k, Where: ka.where, Err: fmt.Errorf("%w: it finds the config files; give --%s or %s", ErrNotSettable, name, EnvName(o.EnvPrefix, name))})
		case !known[name] || (name != k && hasOwnFileFlag(fs, name)):
			err := unknown
			if near := didYouMean(k, known); near != "" {
				err = fmt.Errorf("%w; did you mean %q?", ErrUnknownKey, near)
			}
			errs = append(errs, &Error{Key: k, Where: ka.where, Err: err})
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return st, pos, nil
}

// hasOwnFileFlag says whether --NAME-file exists, whose variable
// <NAME>_FILE then is its own and not NAME's secret file.
func hasOwnFileFlag(fs *flag.FlagSet, name string) bool { return fs.Lookup(name+"-file") != nil }

// UserConfigFile is app's config file in the user's configuration
// directory: $XDG_CONFIG_HOME/app/config.json, else
// $HOME/.config/app/config.json; "" when neither variable is set.
func UserConfigFile(getenv func(string) string, app string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, app, "config.json")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", app, "config.json")
	}
	return ""
}
