package settings

import (
	"flag"
	"slices"
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
