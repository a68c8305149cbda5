package settings

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseArgs parses flags that may come before, between or after positional
// arguments, so `send work "hi" --wait` works as users type it. Everything
// after "--" is positional.
func ParseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// ParseError is a command line the flag package refused (and has already
// explained on the FlagSet's output).
type ParseError struct{ Err error }

func (e *ParseError) Error() string { return e.Err.Error() }
func (e *ParseError) Unwrap() error { return e.Err }

// OwnFlags registers a command's own flags with extra and returns their
// names, for Options.Skip: they are not part of the shared configuration.
func OwnFlags(fs *flag.FlagSet, extra func(*flag.FlagSet)) []string {
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

// SubcommandAt is the index in args of the first argument that is not a
// flag or a flag's value, so flags may come before a subcommand too
// (`remote --json sessions`); valueFlags are the flags that take a value.
// It is -1 when there is none.
func SubcommandAt(args, valueFlags []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return i
		}
		if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && slices.Contains(valueFlags, name) {
			i++ // its value
		}
	}
	return -1
}

// Stray explains the positional arguments pos of a command that takes
// none, nil when there are none. The flag package takes a boolean's value
// only after "=": "--bridge false" sets --bridge and leaves "false" over,
// so a leftover after a boolean flag is said as the flag it meant.
func Stray(fs *flag.FlagSet, args, pos []string) error {
	if len(pos) == 0 {
		return nil
	}
	for i := 1; i < len(args) && args[i-1] != "--"; i++ {
		name := strings.TrimLeft(args[i-1], "-")
		f := fs.Lookup(name)
		if _, err := strconv.ParseBool(args[i]); err == nil && f != nil && strings.HasPrefix(args[i-1], "-") && kindOf(f) == kindBool {
			return fmt.Errorf("%s takes no arguments, not %q: a boolean flag takes its value after '='; did you mean --%s=%s?", fs.Name(), args[i], name, args[i])
		}
	}
	return fmt.Errorf("%s takes no arguments, not %q", fs.Name(), pos[0])
}
